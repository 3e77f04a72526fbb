package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

// piiFixture is an installation with two subjects: one whose id is an
// e-mail address, one whose id is a name no pattern recognises.
func piiFixture(t *testing.T) (e2eFixture, string, string) {
	t.Helper()
	const email, name = "ada.lovelace.1815@example.org", "Ada Augusta Byron"
	f := buildE2EFixture(t, t.TempDir(), []e2eDoc{
		{ID: "rec-1", Owner: email, Text: "Notes about the analytical engine, kept for this customer since the first visit."},
		{ID: "rec-2", Owner: name, Text: "A second customer's letter about poetry, mathematics and the difference engine."},
	})
	return f, email, name
}

// assertNothingWritten checks that no erasure began and that neither the
// log nor the state directory holds the secret.
func assertNothingWritten(t *testing.T, st string, secrets ...string) {
	t.Helper()
	if d := erasureDirs(t, st); len(d) != 0 {
		t.Errorf("a refused erasure left %v", d)
	}
	hits, _ := scanTree(t, st, leakNeedles(t, secretsOf(secrets)))
	reportLeaks(t, "state directory after refused commands", hits)
}

func secretsOf(vs []string) []leakSecret {
	var out []leakSecret
	for i, v := range vs {
		out = append(out, leakSecret{label: "secret " + string(rune('A'+i)), value: v})
	}
	return out
}

func TestForgetRefusesPersonalDataInTheReason(t *testing.T) {
	f, email, name := piiFixture(t)
	st := f.state()
	for _, tc := range []struct {
		stdin string
		args  []string
		what  string // the kind the message must name
	}{
		{"", []string{"forget", email, "--reason", email, "--yes"}, "e-mail address"},
		{email + "\n", []string{"forget", "-", "--reason", "DSR-1 " + email, "--yes"}, "e-mail address"},
		{"", []string{"forget", name, "--reason", "request by " + strings.ToUpper(name), "--yes"}, "identifier of the subject"},
		{"", []string{"forget", name, "--reason", "callback 020 7946 0000", "--yes"}, "phone number"},
		{"", []string{"forget", name, "--reason", "refund GB82 WEST 1234 5698 7654 32", "--yes"}, "IBAN"},
		{"", []string{"forget", name, "--reason", "DSR-1", "--scope", name, "--yes"}, "identifier of the subject"},
	} {
		res := runBinary(t, nil, tc.stdin, append([]string{"--state", st}, tc.args...)...)
		if res.code != exitUsage || !strings.Contains(res.stderr, "--reason") && !strings.Contains(res.stderr, "--scope") || !strings.Contains(res.stderr, tc.what) {
			t.Errorf("want exit %d naming the field and %q:\n%s", exitUsage, tc.what, res)
		}
		for _, s := range []string{email, name, "020 7946 0000", "GB82"} {
			if strings.Contains(strings.ToLower(res.stdout+res.stderr), strings.ToLower(s)) {
				t.Errorf("the output echoes personal data:\n%s", res)
			}
		}
	}
	// erase --trace (the raw id is unknown: the saga keys the reason's
	// words) and erase --queue refuse the same way.
	tr := runBinary(t, nil, "", "--state", st, "trace", name, "--json")
	if tr.code != 0 {
		t.Fatalf("trace: %s", tr)
	}
	t1, err := lineage.DecodeTrace([]byte(tr.stdout))
	if err != nil {
		t.Fatal(err)
	}
	traceID := t1.ID
	for _, args := range [][]string{
		{"erase", "--trace", traceID, "--reason", "for " + name},
		{"erase", "--trace", traceID, "--queue", "--reason", "for " + name},
		{"erase", "--trace", traceID, "--queue", "--reason", "mail " + email},
	} {
		if res := runBinary(t, nil, "", append([]string{"--state", st}, args...)...); res.code != exitUsage || strings.Contains(res.stderr, name) {
			t.Errorf("want exit %d without the text:\n%s", exitUsage, res)
		}
	}
	assertNothingWritten(t, st, email, name)
	if jobs := queuedJobs(t, st); len(jobs) != 0 {
		t.Errorf("a refused reason was queued: %+v", jobs)
	}
	// A ticket reference goes through.
	if res := runBinary(t, nil, "", "--state", st, "forget", name, "--reason", "DSR-1815", "--yes"); res.code != 0 {
		t.Fatalf("forget with a ticket reference: %s", res)
	}
}

func queuedJobs(t *testing.T, st string) []lineage.Job {
	t.Helper()
	ctx := context.Background()
	sd, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	jobs, err := l.(lineage.Queue).Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// A job queued with a reason naming its subject (the queue alone cannot
// tell: it only sees the keyed subject) is failed by the worker, never run.
func TestWorkerFailsAJobWhoseReasonNamesTheSubject(t *testing.T) {
	f, _, name := piiFixture(t)
	st := f.state()
	tr := runBinary(t, nil, "", "--state", st, "trace", name, "--json")
	if tr.code != 0 {
		t.Fatalf("trace: %s", tr)
	}
	t1, err := lineage.DecodeTrace([]byte(tr.stdout))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sd, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.(lineage.Queue).Enqueue(ctx, t1.ID, t1.Subject, t1.Scope, "re "+name); err != nil {
		t.Fatal(err)
	}
	l.Close()
	res := runBinary(t, nil, "", "--state", st, "worker", "--once")
	if res.code != exitUsage || strings.Contains(res.stdout+res.stderr, name) {
		t.Errorf("worker: want exit %d without the text:\n%s", exitUsage, res)
	}
	jobs := queuedJobs(t, st)
	if len(jobs) != 1 || jobs[0].State != lineage.JobFailed || strings.Contains(jobs[0].Error, name) || !strings.Contains(jobs[0].Error, "identifier of the subject") {
		t.Errorf("jobs after the worker: %+v", jobs)
	}
	if d := erasureDirs(t, st); len(d) != 0 {
		t.Errorf("the worker began the erasure: %v", d)
	}
	b, _ := os.ReadFile(filepath.Join(st, "amnesia.log"))
	if strings.Contains(string(b), name) {
		t.Errorf("the log holds the subject id")
	}
}
