package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

// TestWindowCrashResumes: three erasures queued with `erase --queue` (one
// with --due) run in one erasure window (erasure.window in amnesia.yaml);
// the worker is killed mid-window (the saga's crash hook: SIGKILL after a
// journal's k-th entry). At k = 13 (the first erasure's reclaim begins)
// every erasure of the window has deleted and none has reclaimed (the window's shared reclaim comes after every
// erasure's delete). A second worker, once the claims' leases ran out,
// resumes each erasure from its journal: each gets its own complete,
// verifiable certificate and its job is done; the worker prints each
// store's delete persistence latency.
func TestWindowCrashResumes(t *testing.T) {
	for _, k := range []int{5, 13} {
		t.Run(fmt.Sprintf("crash-after-%d", k), func(t *testing.T) { testWindowCrash(t, k) })
	}
}

func testWindowCrash(t *testing.T, k int) {
	docs := workerCorpus(3)
	f := buildE2EFixtureLedger(t, t.TempDir(), "", docs)
	st := f.state()
	cfgPath := filepath.Join(st, "amnesia.yaml")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, append(b, "\nerasure:\n  window: 1h\n  window_max: 10\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	erasures := map[string]string{}
	for i, d := range docs {
		r := runBinary(t, nil, d.Owner+"\n", "--state", st, "trace", "-", "--json")
		if r.code != 0 {
			t.Fatalf("trace: %s", r)
		}
		var tr lineage.Trace
		if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil {
			t.Fatal(err)
		}
		args := []string{"--state", st, "erase", "--trace", tr.ID, "--reason", "TICKET-W", "--queue"}
		if i == 0 {
			for _, bad := range []string{"yesterday", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(40 * 24 * time.Hour).UTC().Format(time.RFC3339)} {
				if r := runBinary(t, nil, "", append(args, "--due", bad)...); r.code != exitUsage || !strings.Contains(r.stderr, "--due") {
					t.Errorf("erase --queue --due %s: %s; want a usage error", bad, r)
				}
			}
			args = append(args, "--due", time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339))
		}
		if r := runBinary(t, nil, "", args...); r.code != 0 || !strings.Contains(r.stdout, "queued erasure "+saga.ID(tr.ID)) {
			t.Fatalf("erase --queue: %s", r)
		}
		erasures[tr.ID] = saga.ID(tr.ID)
	}

	r := runBinary(t, []string{fmt.Sprintf("AMNESIA_CRASH_AFTER_JOURNAL=%d", k)}, "", "--state", st, "worker", "--drain", "--lease", "3s", "--id", "w-crash")
	if !r.signaled || r.signal != syscall.SIGKILL {
		t.Fatalf("worker with the crash hook at %d did not die by SIGKILL:\n%s", k, r)
	}
	if n := len(certFiles(t, st)); n != 0 {
		t.Fatalf("%d certificates published before the crash at %d", n, k)
	}
	sd, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(context.Background(), sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dur := saga.DurableFor(sd, l)
	if k == 13 {
		// Mid-window: every erasure deleted, none reclaimed yet.
		for _, id := range erasures {
			deleted, reclaimed := false, false
			es, _ := saga.ReadJournal(context.Background(), dur, id)
			for _, e := range es {
				deleted = deleted || (e.Step == "delete:vectors" && e.Phase == "done")
				reclaimed = reclaimed || (strings.HasPrefix(e.Step, "reclaim:") && e.Phase == "done")
			}
			if !deleted || reclaimed {
				t.Fatalf("erasure %s at the crash: deleted %v, a reclaim done %v; want deleted, not reclaimed", id, deleted, reclaimed)
			}
		}
	}
	time.Sleep(3500 * time.Millisecond) // the crashed worker's leases run out

	r = runBinary(t, nil, "", "--state", st, "worker", "--drain", "--lease", "10s", "--id", "w-resume")
	if r.code != 0 || !strings.Contains(r.stdout, "delete persistence latency") {
		t.Fatalf("resuming worker: %s", r)
	}
	jobs, err := l.(lineage.Queue).Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != len(docs) {
		t.Fatalf("%d jobs, want %d", len(jobs), len(docs))
	}
	pub := filepath.Join(st, "signing-key.pub.pem")
	for _, j := range jobs {
		id := erasures[j.ID]
		if j.State != lineage.JobDone || j.Worker != "w-resume" || j.Attempts != 2 {
			t.Errorf("job %s: %s by %s after %d claims (%s); want done by w-resume at the second claim", j.ID, j.State, j.Worker, j.Attempts, j.Error)
		}
		if want := certDigest(t, dur, id); j.Certificate != want {
			t.Errorf("job %s completed with %q, want its own certificate %s", j.ID, j.Certificate, want)
		}
		cert := sd.CertificatePath(id)
		if p := predicateOf(t, certificatePayload(t, cert)); p["complete"] != true {
			t.Errorf("erasure %s: certificate is not complete", id)
		}
		if r := runBinary(t, nil, "", "verify", cert, "--public-key", pub); r.code != 0 {
			t.Errorf("verify %s: %s", id, r)
		}
		if !strings.Contains(r.stdout, "delete persistence latency "+id+" docs: ") {
			t.Errorf("worker output has no latency line for %s docs", id)
		}
	}
	if n := len(certFiles(t, st)); n != len(docs) {
		t.Errorf("%d certificates, want %d", n, len(docs))
	}
}
