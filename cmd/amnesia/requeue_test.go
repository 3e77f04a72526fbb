package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// TestQueuedErasureLaterCaptureCrashResumes: an erasure queued with
// `erase --queue`, then a document captured for the same subject (after the
// request). `amnesia worker --once` traces the subject again at the claim,
// says that it erases the later trace, and is killed (the saga's crash hook)
// once that erasure has begun (or decided). A second worker, after the lease ran out,
// resumes the erasure of the later trace from its journal (not a third
// trace, not a failed job): the job is done with the later erasure's
// certificate, which is complete, verifies, and lists the later document.
func TestQueuedErasureLaterCaptureCrashResumes(t *testing.T) {
	// At entry 5 the erasure of the later trace has suppressed; at 25
	// its decide step is done: the ledger marks every artifact erased, so
	// only its saved later trace (not a new trace) can resume it.
	for _, k := range []int{5, 25} {
		t.Run(fmt.Sprintf("sqlite/crash-after-%d", k), func(t *testing.T) { testQueuedLaterCapture(t, "", k) })
		t.Run(fmt.Sprintf("postgres/crash-after-%d", k), func(t *testing.T) { testQueuedLaterCapture(t, ledgertest.PostgresDSN(t), k) })
	}
}

func testQueuedLaterCapture(t *testing.T, ledger string, k int) {
	ctx := context.Background()
	docs := workerCorpus(1)
	f := buildE2EFixtureLedger(t, t.TempDir(), ledger, docs)
	st := f.state()
	owner := docs[0].Owner
	r := runBinary(t, nil, owner+"\n", "--state", st, "trace", "-", "--json")
	if r.code != 0 {
		t.Fatalf("trace: %s", r)
	}
	var queued lineage.Trace
	if err := json.Unmarshal([]byte(r.stdout), &queued); err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, nil, "", "--state", st, "erase", "--trace", queued.ID, "--reason", "TICKET-L", "--queue"); r.code != 0 {
		t.Fatalf("erase --queue: %s", r)
	}

	// The application captures one more document for the subject.
	sd, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ds, err := sqlitedoc.Open(ctx, "docs", f.docsDB(), false)
	if err != nil {
		t.Fatal(err)
	}
	cd := capture.New(l, sd.Keyer, sd.Config.Scope).Docs(ds)
	if err := cd.Put(ctx, capture.Doc{ID: "wq-late", Kind: sqlitedoc.KindDocument, Subject: owner,
		Text: "A later note: the caller asked again on Friday to hold order 998877 at the depot until invoice 4433221 is paid."}); err != nil {
		t.Fatal(err)
	}
	if rec, err := cd.Get(ctx, "wq-late"); err != nil || rec != nil {
		t.Fatalf("read of the later document = %+v, %v; want nothing (suppressed at once)", rec, err)
	}
	ds.Close()
	late := lineage.ArtifactID(sd.Keyer, sd.Config.Scope, "docs", "wq-late")

	r = runBinary(t, []string{fmt.Sprintf("AMNESIA_CRASH_AFTER_JOURNAL=%d", k)}, "", "--state", st, "worker", "--once", "--lease", "3s", "--id", "w-crash")
	if !r.signaled || r.signal != syscall.SIGKILL {
		t.Fatalf("worker with the crash hook did not die by SIGKILL:\n%s", r)
	}
	if !strings.Contains(r.stdout, "1 artifacts were captured for") || !strings.Contains(r.stdout, "it erases the later trace") {
		t.Fatalf("the first worker does not say that it erases the later trace:\n%s", r)
	}
	time.Sleep(3500 * time.Millisecond) // the crashed worker's lease runs out

	r = runBinary(t, nil, "", "--state", st, "worker", "--once", "--lease", "10s", "--id", "w-resume")
	if r.code != 0 || !strings.Contains(r.stdout, "it resumes the erasure of the later trace") {
		t.Fatalf("resuming worker: %s", r)
	}
	jobs, err := l.(lineage.Queue).Jobs(ctx)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs = %+v, %v", jobs, err)
	}
	j := jobs[0]
	dur := saga.DurableFor(sd, l)
	later, err := worker.ContinuedTrace(ctx, &erasure.Env{Dir: sd, Ledger: l}, queued.ID)
	if err != nil || later == nil {
		t.Fatalf("the later trace: %v, %v", later, err)
	}
	id := saga.ID(later.ID)
	if !strings.Contains(r.stdout, "as erasure "+id) {
		t.Errorf("the resuming worker does not name erasure %s:\n%s", id, r)
	}
	if j.ID != queued.ID || j.State != lineage.JobDone || j.Attempts != 2 || j.Certificate != certDigest(t, dur, id) {
		t.Fatalf("job %+v; want the queued trace's job done at the second claim with erasure %s's certificate", j, id)
	}
	cert := sd.CertificatePath(id)
	p := predicateOf(t, certificatePayload(t, cert))
	if p["complete"] != true {
		t.Errorf("certificate of %s is not complete", id)
	}
	found := false
	arts, _ := p["artifacts"].([]any)
	for _, a := range arts {
		if m, _ := a.(map[string]any); m["id"] == late {
			found = m["outcome"] == "VERIFIED"
		}
	}
	if !found || len(arts) <= len(queued.Artifacts) {
		t.Errorf("certificate lists %d artifacts (queued trace %d); the later document verified: %v", len(arts), len(queued.Artifacts), found)
	}
	if r := runBinary(t, nil, "", "verify", cert, "--public-key", filepath.Join(st, "signing-key.pub.pem")); r.code != 0 {
		t.Errorf("verify: %s", r)
	}
}
