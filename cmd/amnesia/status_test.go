package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/queuestatus"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
)

// TestStatusQueue: `amnesia status` on both ledgers, with the built binary.
// Three erasures queued with `erase --queue` are listed waiting (exit 0);
// an erasure past its due date makes status exit 25 and is marked OVERDUE;
// after a worker ran them, --all lists the done ones with their
// certificates and the failed one (its trace does not exist) as not queued
// again (exit 25), and each store's latest delete persistence latency.
// Status changes nothing (the queue and the ledger's head read the same
// before and after), and no subject id, document text or full subject
// digest appears in anything it prints, text or JSON.
func TestStatusQueue(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testStatus(t, "") })
	t.Run("postgres", func(t *testing.T) { testStatus(t, ledgertest.PostgresDSN(t)) })
}

func testStatus(t *testing.T, ledger string) {
	ctx := context.Background()
	docs := workerCorpus(4)
	f := buildE2EFixtureLedger(t, t.TempDir(), ledger, docs)
	st := f.state()
	var printed []string // every line status printed, for the leak check
	status := func(wantCode int, args ...string) binResult {
		t.Helper()
		r := runBinary(t, nil, "", append([]string{"--state", st, "status"}, args...)...)
		printed = append(printed, r.stdout, r.stderr)
		if r.code != wantCode {
			t.Fatalf("want exit %d: %s", wantCode, r)
		}
		return r
	}
	statusJSON := func(wantCode int, args ...string) queuestatus.Report {
		t.Helper()
		r := status(wantCode, append(args, "--json")...)
		var rep queuestatus.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("status --json: %v\n%s", err, r)
		}
		return rep
	}

	if r := status(0); !strings.Contains(r.stdout, "0 waiting, 0 running, 0 done, 0 failed; 0 overdue") {
		t.Errorf("status of an empty queue:\n%s", r)
	}
	status(exitUsage, "--limit", "0")

	var erasures []string
	for i, d := range docs[:3] {
		r := runBinary(t, nil, d.Owner+"\n", "--state", st, "trace", "-", "--json")
		if r.code != 0 {
			t.Fatalf("trace: %s", r)
		}
		var tr lineage.Trace
		if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil {
			t.Fatal(err)
		}
		args := []string{"--state", st, "erase", "--trace", tr.ID, "--reason", "TICKET-S", "--queue"}
		if i == 1 {
			args = append(args, "--due", time.Now().Add(2*time.Hour).UTC().Format(time.RFC3339))
		}
		if r := runBinary(t, nil, "", args...); r.code != 0 {
			t.Fatalf("erase --queue: %s", r)
		}
		erasures = append(erasures, saga.ID(tr.ID))
	}

	r := status(0)
	if !strings.Contains(r.stdout, "3 waiting, 0 running") || strings.Contains(r.stdout, "OVERDUE") {
		t.Errorf("status of three queued erasures:\n%s", r)
	}
	for _, id := range erasures {
		if !strings.Contains(r.stdout, id) {
			t.Errorf("status does not list %s:\n%s", id, r)
		}
	}
	rep := statusJSON(0)
	if rep.Counts.Waiting != 3 || len(rep.Open) != 3 || rep.Attention || rep.History != nil {
		t.Errorf("status --json of three queued erasures: %+v", rep)
	}
	// Claim order: the one due in two hours first (the others are due
	// erasure.deadline after they were queued).
	if rep.Open[0].Erasure != erasures[1] {
		t.Errorf("first listed %s, want %s (due first)", rep.Open[0].Erasure, erasures[1])
	}
	for _, j := range rep.Open {
		if j.State != queuestatus.StateWaiting || j.Due == nil || j.DueInSeconds == nil || *j.DueInSeconds <= 0 || j.Overdue ||
			!strings.HasPrefix(j.SubjectRef, "hmac:") || j.Reason != "TICKET-S" || j.Attempts != 0 || j.AgeSeconds < 0 {
			t.Errorf("queued erasure listed as %+v", j)
		}
	}

	// An erasure past its due date, queued in the ledger directly (the
	// CLI refuses a due date in the past). Its trace does not exist: the
	// worker fails it.
	sd, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	q := l.(lineage.WindowQueue)
	k, err := sd.Keyer.Key(sd.Config.Scope, docs[3].Owner)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("status-overdue"))
	ghost := hex.EncodeToString(sum[:])
	if err := q.EnqueueDue(ctx, ghost, k.String(), sd.Config.Scope, "TICKET-LATE", "", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	jobsBefore, err := q.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seqBefore, headBefore, err := l.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r = status(exitQueueAttention)
	t.Logf("status with an overdue erasure:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "OVERDUE: 1 erasure") || !strings.Contains(r.stdout, "OVERDUE by") || !strings.Contains(r.stdout, "4 waiting") {
		t.Errorf("status with an overdue erasure:\n%s", r)
	}
	rep = statusJSON(exitQueueAttention)
	if rep.Counts.Overdue != 1 || !rep.Attention || len(rep.Open) != 4 || rep.Open[0].Erasure != saga.ID(ghost) ||
		!rep.Open[0].Overdue || *rep.Open[0].DueInSeconds >= 0 {
		t.Errorf("status --json with an overdue erasure: %+v", rep)
	}
	if rep = statusJSON(exitQueueAttention, "--limit", "2"); len(rep.Open) != 2 || rep.Counts.Waiting != 4 || rep.Limit != 2 {
		t.Errorf("status --limit 2: %d listed of %d", len(rep.Open), rep.Counts.Waiting)
	}
	// Status changed nothing.
	jobsAfter, err := q.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jobsBefore, jobsAfter) {
		t.Errorf("status changed the queue:\nbefore %+v\nafter  %+v", jobsBefore, jobsAfter)
	}
	if seq, head, err := l.Head(ctx); err != nil || seq != seqBefore || head != headBefore {
		t.Errorf("status moved the ledger's head: %d %s -> %d %s (%v)", seqBefore, headBefore, seq, head, err)
	}

	w := runBinary(t, nil, "", "--state", st, "worker", "--drain", "--no-window", "--id", "w-status")

	rep = statusJSON(exitQueueAttention, "--all")
	c := rep.Counts
	if c.Done != 3 || c.Failed != 1 || c.FailedUnresolved != 1 || c.Overdue != 0 || c.Waiting+c.Running != 0 || !rep.Attention || len(rep.Open) != 0 {
		t.Fatalf("status --all after the worker: %+v\nworker: %s", c, w)
	}
	if len(rep.History) != 4 {
		t.Fatalf("history lists %d, want 4", len(rep.History))
	}
	for _, j := range rep.History {
		switch j.Erasure {
		case saga.ID(ghost):
			if j.State != queuestatus.StateFailed || j.Error == "" || j.FollowedBy != "" || j.FinishedAt == nil || j.Worker != "w-status" {
				t.Errorf("the ghost erasure listed as %+v", j)
			}
		default:
			if j.State != queuestatus.StateDone || j.Certificate == "" || j.FinishedAt == nil || j.Attempts != 1 {
				t.Errorf("a done erasure listed as %+v", j)
			}
		}
	}
	stores := map[string]queuestatus.StoreLatency{}
	for _, l := range rep.Latency {
		stores[l.Store] = l
	}
	for _, s := range []string{"docs", "vectors"} {
		l, ok := stores[s]
		if !ok {
			t.Errorf("no delete persistence latency for %s: %+v (unread %d)", s, rep.Latency, rep.LatencyUnread)
			continue
		}
		if l.State == "clean" && (l.LatencyMS == nil || *l.LatencyMS <= 0) || l.State != "clean" && l.LatencyMS != nil {
			t.Errorf("%s latency %+v", s, l)
		}
	}
	r = status(exitQueueAttention, "--all")
	t.Logf("status --all:\n%s", r.stdout)
	for _, want := range []string{"3 done, 1 failed (1 not queued again)", "FAILED: 1 erasure", "not queued again", "delete persistence latency", "docs"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status --all does not say %q:\n%s", want, r)
		}
	}
	if rep = statusJSON(exitQueueAttention, "--all", "--limit", "1"); len(rep.History) != 1 || rep.History[0].Erasure != saga.ID(ghost) && rep.History[0].FinishedAt == nil {
		t.Errorf("status --all --limit 1: %+v", rep.History)
	}

	// Leak check: nothing status printed holds a subject id, a fragment of
	// a document, or a subject's full keyed digest.
	out := strings.Join(printed, "\n")
	for _, d := range docs {
		kd, err := sd.Keyer.Key(sd.Config.Scope, d.Owner)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{d.Owner, strings.SplitN(d.Owner, "@", 2)[0], d.Text[:40], d.Text[len(d.Text)-30:], kd.String()} {
			if strings.Contains(out, s) {
				t.Errorf("status printed %q", s)
			}
		}
	}
}
