package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
)

// The CLI side of the model leg, with a real (if trivial) retrain command:
// /bin/cp "trains" an artifact that is the shard's data file itself, so the
// served artifact's bytes show what it was trained on.
func TestModelCLI(t *testing.T) {
	cp := "/bin/cp"
	if _, err := os.Stat(cp); err != nil {
		t.Skip("no /bin/cp")
	}
	root := t.TempDir()
	st := filepath.Join(root, "state")
	os.MkdirAll(filepath.Join(root, "served"), 0o755)
	os.MkdirAll(filepath.Join(root, "runs"), 0o755)
	cfg := fmt.Sprintf(`version: 1
stores:
  - {name: train-0, type: file, path: %[1]s/t0.jsonl, key: id, subject: subject, content: [text]}
  - {name: train-1, type: file, path: %[1]s/t1.jsonl, key: id, subject: subject, content: [text]}
models:
  - name: bot
    dataset: [train-0, train-1]
    sharded: true
    retrain: {command: [%[2]s, "{shard}", "{output}"], timeout: 1m}
    served: %[1]s/served/shard-{shard}.bin
    delete_tainted: true
`, root, cp)
	for _, f := range []string{"t0.jsonl", "t1.jsonl"} {
		os.WriteFile(filepath.Join(root, f), nil, 0o644)
	}
	cfgPath := filepath.Join(root, "amnesia.yaml")
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	if _, errOut, code := runCLI(t, "", "--state", st, "init", "--config", cfgPath); code != exitOK {
		t.Fatalf("init: %s", errOut)
	}
	ctx := context.Background()
	app, err := capture.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	people := []string{"ana@example.org", "bo@example.org", "cy@example.org", "di@example.org", "ed@example.org", "flo@example.org"}
	shardOf := map[string]string{}
	for i, p := range people {
		out, errOut, code := runCLI(t, p+"\n", "--state", st, "model", "shard", "--model", "bot", "-")
		if code != exitOK {
			t.Fatalf("model shard: %s", errOut)
		}
		store, _, err := app.TrainingShard("bot", p)
		if err != nil || !strings.HasPrefix(out, store+"\t") {
			t.Fatalf("model shard printed %q, capture says %s (%v)", out, store, err)
		}
		shardOf[p] = store
		if err := app.PutTrainingRow(ctx, store, capture.TrainingRow{ID: fmt.Sprintf("row-%d", i), Subject: p, Text: fmt.Sprintf("secret-note-%d of the person", i)}); err != nil {
			t.Fatal(err)
		}
	}
	app.Close()
	for i := 0; i < 2; i++ {
		data, run, served := filepath.Join(root, fmt.Sprintf("t%d.jsonl", i)), filepath.Join(root, "runs", fmt.Sprintf("shard-%d.bin", i)), filepath.Join(root, "served", fmt.Sprintf("shard-%d.bin", i))
		b, _ := os.ReadFile(data)
		os.WriteFile(run, b, 0o644)
		os.WriteFile(served, b, 0o644)
		out, errOut, code := runCLI(t, "", "--state", st, "model", "record-run", "--model", "bot", "--shard", fmt.Sprint(i), "--output", run, "--served", served, "--", "cp", "{shard}", "{output}")
		if code != exitOK || !strings.Contains(out, "recorded run-") {
			t.Fatalf("record-run: %s %s", out, errOut)
		}
	}
	target := people[0]
	out, errOut, code := runCLI(t, "", "--state", st, "trace", target)
	if code != exitOK || !strings.Contains(out, "models reached by the subject's training rows") || !strings.Contains(out, "an erasure will retrain this shard") {
		t.Fatalf("trace does not show the model reached:\n%s%s", out, errOut)
	}
	out, _, code = runCLI(t, "", "--state", st, "model", "reach", target)
	var reach []map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &reach) != nil || len(reach) != 1 || reach[0]["model"] != "bot" || reach[0]["rows"] != float64(1) {
		t.Fatalf("model reach: %s", out)
	}
	if strings.Contains(out, target) {
		t.Fatal("model reach prints the raw id")
	}
	out, errOut, code = runCLI(t, "", "--state", st, "forget", target, "--reason", "DSR-15", "--yes")
	if code != exitOK {
		t.Fatalf("forget: exit %d\n%s\n%s", code, out, errOut)
	}
	cert, payload := singleCertificate(t, st)
	pred := predicateOf(t, payload)
	models, _ := pred["models"].([]any)
	if len(models) != 1 {
		t.Fatalf("certificate models: %v", pred["models"])
	}
	m := models[0].(map[string]any)
	if m["outcome"] != "VERIFIED" || m["level"] != "model" || pred["complete"] != true {
		t.Fatalf("model outcome %v, complete %v", m, pred["complete"])
	}
	// The served artifact of the target's shard no longer holds its row; the
	// other shard's is untouched.
	ts := map[string]string{"train-0": "0", "train-1": "1"}[shardOf[target]]
	sb, _ := os.ReadFile(filepath.Join(root, "served", "shard-"+ts+".bin"))
	if strings.Contains(string(sb), "secret-note-0 ") {
		t.Fatal("the served artifact still holds the erased row")
	}
	other := map[string]string{"0": "1", "1": "0"}[ts]
	ob, _ := os.ReadFile(filepath.Join(root, "served", "shard-"+other+".bin"))
	orig, _ := os.ReadFile(filepath.Join(root, "runs", "shard-"+other+".bin"))
	if string(ob) != string(orig) {
		t.Fatal("the other shard's served artifact changed")
	}
	if _, err := os.Stat(filepath.Join(root, "runs", "shard-"+ts+".bin")); !os.IsNotExist(err) {
		t.Fatal("the tainted artifact file was not deleted")
	}
	if _, errOut, code := runCLI(t, "", "verify", cert, "--public-key", filepath.Join(st, "signing-key.pub.pem")); code != exitOK {
		t.Fatalf("verify a certificate with a model outcome: %s", errOut)
	}
	out, _, code = runCLI(t, "", "--state", st, "check")
	if code != exitOK || !strings.Contains(out, "model bot") || !strings.Contains(out, "OK (2 shards)") {
		t.Fatalf("check:\n%s", out)
	}
	out, _, code = runCLI(t, "", "--state", st, "model", "list")
	if code != exitOK || !strings.Contains(out, "shard "+ts) || !strings.Contains(out, "3 recorded training runs") {
		t.Fatalf("model list:\n%s", out)
	}
}

// amnesia killed (SIGKILL, with its retrain command) in the middle of a
// retrain: running forget again resumes the erasure, retrains the shard
// from the start and ends VERIFIED.
func TestModelRetrainSurvivesKill(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	root := t.TempDir()
	st := filepath.Join(root, "state")
	mark := filepath.Join(root, "slow-once")
	os.WriteFile(mark, nil, 0o600)
	os.MkdirAll(filepath.Join(root, "served"), 0o755)
	// The "training": copy the shard file; the first time, write a partial
	// output and hang.
	script := filepath.Join(root, "train.sh")
	os.WriteFile(script, []byte(fmt.Sprintf("if [ -e %s ]; then rm %s; echo partial > \"$2\"; sleep 60; fi; cp \"$1\" \"$2\"\n", mark, mark)), 0o700)
	cfg := fmt.Sprintf(`version: 1
stores:
  - {name: train-0, type: file, path: %[1]s/t0.jsonl, key: id, subject: subject, content: [text]}
models:
  - name: bot
    dataset: [train-0]
    sharded: true
    retrain: {command: [/bin/sh, %[2]s, "{shard}", "{output}"], timeout: 2m}
    served: %[1]s/served/shard-{shard}.bin
`, root, script)
	os.WriteFile(filepath.Join(root, "t0.jsonl"), nil, 0o644)
	cfgPath := filepath.Join(root, "amnesia.yaml")
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	if _, errOut, code := runCLI(t, "", "--state", st, "init", "--config", cfgPath); code != exitOK {
		t.Fatalf("init: %s", errOut)
	}
	ctx := context.Background()
	app, err := capture.Open(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"ana@example.org", "bo@example.org"} {
		if err := app.PutTrainingRow(ctx, "train-0", capture.TrainingRow{ID: fmt.Sprintf("row-%d", i), Subject: p, Text: fmt.Sprintf("note-%d about the person", i)}); err != nil {
			t.Fatal(err)
		}
	}
	app.Close()
	served := filepath.Join(root, "served", "shard-0.bin")
	b, _ := os.ReadFile(filepath.Join(root, "t0.jsonl"))
	os.WriteFile(served, b, 0o644)
	if _, errOut, code := runCLI(t, "", "--state", st, "model", "record-run", "--model", "bot", "--output", served, "--served", served); code != exitOK {
		t.Fatalf("record-run: %s", errOut)
	}

	args := []string{"--state", st, "forget", "ana@example.org", "--reason", "DSR-16", "--yes"}
	cmd := exec.Command(amnesiaBin, args...)
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var cout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &cout, &cout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	artifacts := filepath.Join(st, "models", "bot", "artifacts")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(artifacts, "*-1.artifact")); len(m) == 1 {
			if b, _ := os.ReadFile(m[0]); string(b) == "partial\n" {
				break
			}
		}
		if time.Now().After(deadline) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			ls, _ := filepath.Glob(filepath.Join(st, "models", "*", "*"))
			lg, _ := filepath.Glob(filepath.Join(st, "models", "logs", "*"))
			var lb []byte
			if len(lg) > 0 {
				lb, _ = os.ReadFile(lg[0])
			}
			t.Fatalf("the retrain never started:\n%s\n%v\n%s", cout.String(), ls, lb)
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // amnesia and its retrain command
	cmd.Wait()
	if got, _ := os.ReadFile(served); string(got) != string(b) {
		t.Fatal("a killed retrain changed the served artifact")
	}
	res := runBinary(t, nil, "", args...)
	if res.code != exitOK {
		t.Fatalf("resume: %s", res)
	}
	_, payload := singleCertificate(t, st)
	m := predicateOf(t, payload)["models"].([]any)[0].(map[string]any)
	if m["outcome"] != "VERIFIED" {
		t.Fatalf("after the resume: %v", m)
	}
	if got, _ := os.ReadFile(served); strings.Contains(string(got), "note-0") || !strings.Contains(string(got), "note-1") {
		t.Fatalf("served artifact after the resume:\n%s", got)
	}
	logs, _ := filepath.Glob(filepath.Join(st, "models", "logs", "*.log"))
	lb, _ := os.ReadFile(logs[0])
	if len(logs) != 1 || strings.Count(string(lb), `"event":"start"`) != 2 {
		t.Fatalf("retrain log: %s", lb)
	}
}

func TestCheckWarnsAboutModels(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "t0.jsonl"), nil, 0o644)
	cfg := fmt.Sprintf(`version: 1
stores:
  - {name: train-0, type: file, path: %[1]s/t0.jsonl, key: id, subject: subject, content: [text]}
models:
  - name: bot
    dataset: [train-0]
    sharded: true
    retrain: {command: [/nonexistent/train, "{shard}", "{output}"]}
    served: %[1]s/missing/shard-{shard}.bin
`, root)
	p := filepath.Join(root, "amnesia.yaml")
	os.WriteFile(p, []byte(cfg), 0o600)
	out, errOut, code := runCLI(t, "", "check", "--config", p)
	if code != exitOK || !strings.Contains(out, "model bot") || !strings.Contains(out, `"/nonexistent/train" not found`) || !strings.Contains(out, "does not exist") {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
}
