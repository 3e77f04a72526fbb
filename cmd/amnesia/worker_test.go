package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/subject"
)

func workerCorpus(n int) []e2eDoc {
	var docs []e2eDoc
	for i := 0; i < n; i++ {
		owner := fmt.Sprintf("worker.subject.%02d@example.org", i)
		docs = append(docs, e2eDoc{ID: fmt.Sprintf("wq-%02d", i), Owner: owner, Text: fmt.Sprintf(
			"Ticket %d: %s asked on day %d to move the delivery of order %06d to the depot at gate %d. "+
				"The parcel weighs %d kilograms and holds %d boxes of spare parts for machine %d. "+
				"Call back before %d o'clock about invoice %07d.", i, owner, 3+i, 410000+733*i, 17+i, 2+i, 5+2*i, 900+i, 9+i%5, 5550000+i*911)})
	}
	return docs
}

// TestWorkersShareOneLedger: several subjects' erasures are queued with
// `erase --queue`, then two `amnesia worker --drain` processes run them at
// once against one ledger and one state directory. Every erasure is done
// exactly once: one claim and one completion per job, one certificate per
// erasure, every journal step begun and finished once, and both workers
// did some of the work.
func TestWorkersShareOneLedger(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { testWorkers(t, ledgertest.PostgresDSN(t)) })
	t.Run("sqlite", func(t *testing.T) { testWorkers(t, "") })
}

func testWorkers(t *testing.T, ledger string) {
	const subjects = 8
	docs := workerCorpus(subjects)
	f := buildE2EFixtureLedger(t, t.TempDir(), ledger, docs)
	st := f.state()
	erasures := map[string]string{} // trace id -> erasure id
	for _, d := range docs {
		r := runBinary(t, nil, d.Owner+"\n", "--state", st, "trace", "-", "--json")
		if r.code != 0 {
			t.Fatalf("trace: %s", r)
		}
		var tr lineage.Trace
		if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ { // queueing twice is queueing once
			if r := runBinary(t, nil, "", "--state", st, "erase", "--trace", tr.ID, "--reason", "TICKET-Q", "--queue"); r.code != 0 || !strings.Contains(r.stdout, "queued erasure "+saga.ID(tr.ID)) {
				t.Fatalf("erase --queue: %s", r)
			}
		}
		erasures[tr.ID] = saga.ID(tr.ID)
	}
	if n := len(certFiles(t, st)); n != 0 {
		t.Fatalf("queueing ran %d erasures", n)
	}

	barrier := t.TempDir()
	env := []string{fmt.Sprintf("AMNESIA_TEST_WORKER_BARRIER=%s:2", barrier)}
	outs := runConcurrently(t, env,
		[]string{"--state", st, "worker", "--drain", "--lease", "6s", "--id", "worker-A"},
		[]string{"--state", st, "worker", "--drain", "--lease", "6s", "--id", "worker-B"})
	for _, r := range outs {
		if r.code != 0 {
			t.Fatalf("worker: %s", r)
		}
	}

	// The store files are intact (see lockFileStores in internal/worker).
	for _, path := range []string{f.docsDB(), f.vecsDB()} {
		db, err := sql.Open("sqlite3", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		var res string
		if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
			t.Errorf("%s after the workers: integrity_check = %q, %v", path, res, err)
		}
		db.Close()
	}

	// The queue: every job done once, by one claim, with its certificate's digest.
	sd, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(context.Background(), sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Journals, traces and certificates are where the installation keeps
	// them: the ledger (PostgreSQL) or the state directory (SQLite).
	dur := saga.DurableFor(sd, l)
	jobs, err := l.(lineage.Queue).Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != subjects {
		t.Fatalf("%d jobs in the queue, want %d", len(jobs), subjects)
	}
	byWorker := map[string][]string{}
	for _, j := range jobs {
		id, ok := erasures[j.ID]
		if !ok {
			t.Fatalf("queue holds an unknown job %s", j.ID)
		}
		if j.State != lineage.JobDone || j.Attempts != 1 {
			t.Errorf("job %s: %s after %d claims (%s), want done after exactly 1", j.ID, j.State, j.Attempts, j.Error)
		}
		if want := certDigest(t, dur, id); j.Certificate != want {
			t.Errorf("job %s completed with certificate %q, want the published one %s", j.ID, j.Certificate, want)
		}
		byWorker[j.Worker] = append(byWorker[j.Worker], id)
	}
	for i, w := range []string{"worker-A", "worker-B"} {
		if len(byWorker[w]) == 0 {
			t.Errorf("%s did no erasure (queue: %v)\n%s", w, byWorker, outs[i])
		}
		// What each worker says it ran is what the queue says it completed.
		said := regexp.MustCompile(`worker `+w+`: erasure (er-[0-9a-f]+)`).FindAllStringSubmatch(outs[i].stdout, -1)
		if len(said) != len(byWorker[w]) {
			t.Errorf("%s ran %d erasures, the queue credits it with %d", w, len(said), len(byWorker[w]))
		}
	}
	if len(byWorker) != 2 {
		t.Errorf("jobs completed by %v, want worker-A and worker-B only", byWorker)
	}

	// One complete, valid certificate per erasure, each erasure's journal
	// showing every step begun and finished exactly once (no step run by two
	// workers).
	if n := len(certFiles(t, st)); n != subjects {
		t.Errorf("%d certificates, want %d", n, subjects)
	}
	pub := filepath.Join(st, "signing-key.pub.pem")
	for _, id := range erasures {
		cert := sd.CertificatePath(id)
		if p := predicateOf(t, certificatePayload(t, cert)); p["complete"] != true {
			t.Errorf("erasure %s: certificate is not complete", id)
		}
		if r := runBinary(t, nil, "", "verify", cert, "--public-key", pub); r.code != 0 {
			t.Errorf("verify %s: %s", id, r)
		}
		begun, finished := map[string]int{}, map[string]int{}
		for _, e := range readJournal(t, dur, id) {
			switch e.Phase {
			case "begin":
				begun[e.Step]++
			case "failed":
				t.Errorf("erasure %s: step %s failed: %s", id, e.Step, e.Error)
				fallthrough
			default:
				finished[e.Step]++
			}
		}
		for _, step := range []string{"plan", "suppress", "delete:docs", "delete:vectors", "decide", "certificate", "publish"} {
			if begun[step] != 1 || finished[step] != 1 {
				t.Errorf("erasure %s: step %s begun %d and finished %d times, want once each", id, step, begun[step], finished[step])
			}
		}
		for step, n := range begun {
			if n != 1 || finished[step] != 1 {
				t.Errorf("erasure %s: step %s begun %d and finished %d times", id, step, n, finished[step])
			}
		}
	}
	// The ledger holds this erasure's outcome for every artifact it traced.
	for trace, id := range erasures {
		b, err := dur.Trace(context.Background(), trace)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := lineage.DecodeTrace(b)
		if err != nil {
			t.Fatal(err)
		}
		k, err := subject.ParseKey(tr.Subject)
		if err != nil {
			t.Fatal(err)
		}
		v, err := l.View(context.Background(), tr.Scope, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range tr.Artifacts {
			if v.Erased[a.ID] == "" {
				t.Errorf("erasure %s: the ledger has no erasure outcome for %s", id, a.ID)
			}
		}
	}
	if r := runBinary(t, nil, "", "--state", st, "worker", "--once"); r.code != 0 || !strings.Contains(r.stdout, "no erasure waiting") {
		t.Errorf("worker --once on an empty queue: %s", r)
	}
}

// runConcurrently starts the binary once per argument list, all at once,
// and waits for every run (at most two minutes).
func runConcurrently(t *testing.T, env []string, argss ...[]string) []binResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type run struct {
		cmd      *exec.Cmd
		out, err bytes.Buffer
	}
	runs := make([]*run, len(argss))
	for i, args := range argss {
		r := &run{cmd: exec.CommandContext(ctx, amnesiaBin, args...)}
		r.cmd.Env = append(cleanEnv(), env...)
		r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.err
		if err := r.cmd.Start(); err != nil {
			t.Fatalf("start amnesia %s: %v", strings.Join(args, " "), err)
		}
		runs[i] = r
	}
	res := make([]binResult, len(runs))
	for i, r := range runs {
		err := r.cmd.Wait()
		res[i] = binResult{args: argss[i], stdout: r.out.String(), stderr: r.err.String()}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			res[i].code = ee.ExitCode()
		default:
			t.Fatalf("amnesia %s: %v", strings.Join(argss[i], " "), err)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the workers did not finish within two minutes:\n%s\n%s", res[0], res[1])
	}
	return res
}

// certDigest is the digest of certificate id where the installation keeps
// it, as the worker reports it to the queue.
func certDigest(t *testing.T, dur saga.Durable, id string) string {
	t.Helper()
	b, err := dur.Certificate(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return saga.Digest(b)
}

// readJournal reads erasure id's journal where the installation keeps it,
// strictly (saga.ReadJournal: whole lines, unbroken chain, seq 1, 2, …).
func readJournal(t *testing.T, dur saga.Durable, id string) []journalEntry {
	t.Helper()
	es, err := saga.ReadJournal(context.Background(), dur, id)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func fileDigestT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
