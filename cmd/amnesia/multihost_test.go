package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// multiHost is one installation of three hosts: three state directories
// that share nothing but the PostgreSQL ledger (and the secrets, from
// versioned directories as a secret manager would mount them), with one
// PostgreSQL document store.
type multiHost struct {
	ledger string // the ledger's DSN (superuser: the test inspects it)
	states []string
	env    *erasure.Env // host 0's, open on the ledger
	traces []*lineage.Trace
	pub    string // the signing key's public half
}

// newMultiHost builds the installation and queues the erasure of n
// subjects' documents. The store's role owns its table but may not read
// the server's files: reclaim (VACUUM FULL) runs, the physical probe does
// not, so that concurrent erasures of one table end VERIFIED(logical)
// rather than racing each other's WAL (docs/scale.md).
func newMultiHost(t *testing.T, n int) *multiHost {
	t.Helper()
	ctx := context.Background()
	m := &multiHost{ledger: pgtest.DB(t)}
	storeAdmin := pgtest.DB(t)
	b := make([]byte, 6)
	rand.Read(b)
	role, pw := "amnesia_mh_"+hex.EncodeToString(b), hex.EncodeToString(b)+"pw"
	pgAdmin(t, storeAdmin, "CREATE ROLE "+role+" LOGIN PASSWORD '"+pw+"'")
	t.Cleanup(func() {
		pgAdmin(t, storeAdmin, "DROP OWNED BY "+role)
		pgAdmin(t, storeAdmin, "DROP ROLE "+role)
	})
	pgAdmin(t, storeAdmin, "GRANT USAGE, CREATE ON SCHEMA public TO "+role)
	u, err := url.Parse(storeAdmin)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, pw)

	root := t.TempDir()
	secrets := state.SecretsConfig{Pepper: "dir:" + filepath.Join(root, "secrets", "pepper"), SigningKey: "dir:" + filepath.Join(root, "secrets", "signing-key")}
	for i := range 3 {
		cfg := state.DefaultConfig()
		cfg.Ledger, cfg.Secrets = m.ledger, secrets
		cfg.Stores = []state.StoreConfig{{Name: "docs", Type: pgdoc.Type, DSN: u.String(), Table: "mh_docs", Reclaim: "full"}}
		p := filepath.Join(root, fmt.Sprintf("host-%d", i))
		sd, err := state.Init(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		m.states = append(m.states, p)
		if i > 0 {
			continue
		}
		m.pub = sd.PublicKeyPath()
		l, err := sd.OpenLedger(ctx, state.LedgerCreate)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		m.env = &erasure.Env{Dir: sd, Ledger: l}
	}
	sd := m.env.Dir
	s, err := sd.Config.OpenStore(ctx, sd.Config.Stores[0], true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	docs := capture.New(m.env.Ledger, sd.Keyer, "").Docs(s.(*pgdoc.Store))
	for i := range n {
		owner := fmt.Sprintf("host.subject.%02d@example.org", i)
		for d := range 2 {
			text := fmt.Sprintf("Ticket %d-%d: %s moved the delivery of order %06d to the depot at gate %d; the parcel holds %d boxes for machine %d.",
				i, d, owner, 410000+733*i+d, 17+i, 5+2*i+d, 900+i)
			if err := docs.Put(ctx, capture.Doc{ID: fmt.Sprintf("mh-%02d-%d", i, d), Kind: "document", Subject: owner, Text: text}); err != nil {
				t.Fatal(err)
			}
		}
		k, err := sd.Keyer.Key(sd.Config.Scope, owner)
		if err != nil {
			t.Fatal(err)
		}
		tr, _, err := m.env.Trace(ctx, k, sd.Config.Scope)
		if err != nil {
			t.Fatal(err)
		}
		if err := worker.Enqueue(ctx, m.env, tr, "TICKET-MH"); err != nil {
			t.Fatal(err)
		}
		m.traces = append(m.traces, tr)
	}
	// No file of the erasures is in any host's state directory: the traces
	// went to the ledger.
	m.noLocalErasureFiles(t)
	return m
}

func pgAdmin(t *testing.T, dsn, stmt string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// noLocalErasureFiles: no journal, sealed evidence or trace is a file of a
// host (certificates/ holds each host's copies of what it published).
func (m *multiHost) noLocalErasureFiles(t *testing.T) {
	t.Helper()
	for _, st := range m.states {
		for _, pat := range []string{"erasures/*/*", "traces/*"} {
			if got, _ := filepath.Glob(filepath.Join(st, pat)); len(got) > 0 {
				t.Errorf("host %s keeps erasure files: %v", filepath.Base(st), got)
			}
		}
	}
}

// jobs reads the queue.
func (m *multiHost) jobs(t *testing.T) []lineage.Job {
	t.Helper()
	js, err := m.env.Ledger.(lineage.Queue).Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// workerRun is one worker process.
type workerRun struct {
	host int
	cmd  *exec.Cmd
	out  bytes.Buffer
	err  bytes.Buffer
}

// startWorker starts `amnesia worker --drain` on host with extra
// environment entries.
func (m *multiHost) startWorker(t *testing.T, host int, id string, env ...string) *workerRun {
	t.Helper()
	w := &workerRun{host: host, cmd: exec.Command(amnesiaBin, "--state", m.states[host], "worker", "--drain", "--lease", "4s", "--poll", "200ms", "--id", id)}
	w.cmd.Env = append(cleanEnv(), env...)
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.err
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

var claimedLine = regexp.MustCompile(`worker (host-\d)-[^:]*: erasure (er-[0-9a-f]+) \(trace`)

// TestHostsResumeEachOthersErasures: three workers on three hosts (three
// state directories, one PostgreSQL ledger) are killed at random points,
// by the crash hook after a random journal entry and by SIGKILL from
// outside at a random time, round after round, until the queue is empty.
// Every erasure ends exactly once, complete, with one certificate in the
// ledger whose journal finished every step once; the transparency log has
// no duplicate leaf; no host keeps a journal, evidence or trace file.
func TestHostsResumeEachOthersErasures(t *testing.T) {
	const subjects = 9
	m := newMultiHost(t, subjects)
	seed := time.Now().UnixNano()
	rng := mrand.New(mrand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	claimedBy := map[string]map[string]bool{} // erasure -> hosts that claimed it
	kills := 0
	for round := 0; ; round++ {
		last := round >= 8 // the last rounds run without crashes
		var runs []*workerRun
		for h := range 3 {
			var env []string
			switch {
			case round < 3: // every worker dies within its first erasure (20 entries)
				env = append(env, fmt.Sprintf("AMNESIA_CRASH_AFTER_JOURNAL=%d", 1+rng.IntN(20)))
			case !last && rng.IntN(4) > 0:
				env = append(env, fmt.Sprintf("AMNESIA_CRASH_AFTER_JOURNAL=%d", 1+rng.IntN(24)))
			}
			runs = append(runs, m.startWorker(t, h, fmt.Sprintf("host-%d-r%d", h, round), env...))
		}
		var wg sync.WaitGroup
		if !last {
			victim, after := runs[rng.IntN(3)], time.Duration(rng.IntN(3000))*time.Millisecond
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(after)
				victim.cmd.Process.Signal(syscall.SIGKILL) // may have exited already
			}()
		}
		deadline := time.AfterFunc(2*time.Minute, func() {
			for _, r := range runs {
				r.cmd.Process.Kill()
			}
		})
		for _, r := range runs {
			err := r.cmd.Wait()
			if ws, ok := r.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				kills++
			} else if err != nil && last {
				t.Errorf("round %d, host %d: worker failed without a crash: %v\n%s%s", round, r.host, err, r.out.String(), r.err.String())
			}
			for _, mm := range claimedLine.FindAllStringSubmatch(r.out.String(), -1) {
				if claimedBy[mm[2]] == nil {
					claimedBy[mm[2]] = map[string]bool{}
				}
				claimedBy[mm[2]][mm[1]] = true
			}
		}
		deadline.Stop()
		wg.Wait()
		done := 0
		for _, j := range m.jobs(t) {
			if j.State == lineage.JobDone {
				done++
			}
		}
		t.Logf("round %d: %d of %d erasures done", round, done, subjects)
		if done == subjects {
			break
		}
		if round >= 12 {
			t.Fatalf("the queue is not done after %d rounds: %+v", round+1, m.jobs(t))
		}
		time.Sleep(4500 * time.Millisecond) // the killed workers' leases run out
	}
	crossHost := 0
	for _, hosts := range claimedBy {
		if len(hosts) > 1 {
			crossHost++
		}
	}
	t.Logf("%d workers killed; %d of %d erasures claimed on more than one host", kills, crossHost, subjects)
	if kills < 3 || crossHost == 0 {
		t.Errorf("%d workers killed, %d erasures resumed on another host: the test proved too little", kills, crossHost)
	}
	m.checkDoneOnce(t)
}

// checkDoneOnce checks the end state: every job done with the digest of the
// one certificate of its erasure, that certificate valid and complete, its
// journal finishing every step once, the log without duplicate leaves.
func (m *multiHost) checkDoneOnce(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	dur := m.env.Durable()
	want := map[string]bool{}
	for _, tr := range m.traces {
		want[saga.ID(tr.ID)] = true
	}
	for _, j := range m.jobs(t) {
		id := saga.ID(j.ID)
		if j.State != lineage.JobDone {
			t.Errorf("job %s: %s (%s), want done", id, j.State, j.Error)
			continue
		}
		if got := certDigest(t, dur, id); j.Certificate != got {
			t.Errorf("job %s completed with %s, the ledger's certificate is %s", id, j.Certificate, got)
		}
	}
	ids, err := dur.Certificates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(want) {
		t.Errorf("the ledger holds %d certificates %v, want one per erasure (%d)", len(ids), ids, len(want))
	}
	for _, id := range ids {
		if !want[id] {
			t.Errorf("certificate %s is of no queued erasure", id)
			continue
		}
		b, err := dur.Certificate(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), id+".dsse.json")
		os.WriteFile(p, b, 0o600)
		if r := runBinary(t, nil, "", "verify", p, "--public-key", m.pub); r.code != 0 {
			t.Errorf("verify %s: %s", id, r)
		}
		pr := predicateOf(t, certificatePayload(t, p))
		if pr["complete"] != true {
			t.Errorf("erasure %s: certificate is not complete: %v", id, pr["counts"])
		}
		// It says how its sealed evidence was destroyed, and what keeps it.
		if oos := fmt.Sprint(pr["out_of_scope"]); !strings.Contains(oos, "sealed evidence in the ledger's write-ahead log") || !strings.Contains(oos, "VACUUM FULL") {
			t.Errorf("erasure %s: the certificate does not say where its sealed evidence was kept and how it was destroyed: %s", id, oos)
		}
		finished := map[string]int{}
		for _, e := range readJournal(t, dur, id) {
			switch e.Phase {
			case "failed":
				t.Errorf("erasure %s: step %s failed: %s", id, e.Step, e.Error)
				finished[e.Step]++
			case "done":
				finished[e.Step]++
			}
		}
		for _, step := range []string{"plan", "suppress", "evidence:docs", "delete:docs", "reclaim:docs", "probe:docs", "decide", "certificate", "publish"} {
			if finished[step] != 1 {
				t.Errorf("erasure %s: step %s finished %d times, want once", id, step, finished[step])
			}
		}
		for step, n := range finished {
			if n != 1 {
				t.Errorf("erasure %s: step %s finished %d times", id, step, n)
			}
		}
	}
	c, err := pgx.Connect(ctx, m.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var leaves, distinct, sealed int
	if err := c.QueryRow(ctx, `SELECT count(*), count(DISTINCT data) FROM tlog_leaves`).Scan(&leaves, &distinct); err != nil {
		t.Fatal(err)
	}
	if leaves != distinct || leaves != 2*len(want) {
		t.Errorf("transparency log: %d leaves, %d distinct, want %d (erasure-started and certificate, once each)", leaves, distinct, 2*len(want))
	}
	if err := c.QueryRow(ctx, `SELECT count(*) FROM erasure_sealed`).Scan(&sealed); err != nil || sealed != 0 {
		t.Errorf("sealed evidence rows left after every erasure published: %d, %v", sealed, err)
	}
	m.noLocalErasureFiles(t)
}

// noPersonalData: the ledger's erasure tables (journal, sealed evidence,
// traces and certificates) hold no subject id and no content in clear.
func (m *multiHost) noPersonalData(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, m.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var all []byte
	for _, q := range []string{`SELECT erasure || name || step || phase || line FROM erasure_journal`,
		`SELECT convert_to(id, 'UTF8') || body FROM erasure_sealed`, `SELECT convert_to(kind || id, 'UTF8') || body FROM erasure_records`} {
		rows, _ := c.Query(ctx, q)
		var b []byte
		_, err := pgx.ForEachRow(rows, []any{&b}, func() error { all = append(all, b...); return nil })
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if len(all) == 0 {
		t.Fatal("the ledger's erasure tables are empty: nothing to check")
	}
	for _, needle := range []string{"host.subject.", "@example.org", "moved the delivery of order", "to the depot at gate", "boxes for machine"} {
		if bytes.Contains(bytes.ToLower(all), []byte(strings.ToLower(needle))) {
			t.Errorf("the ledger's erasure tables hold %q in clear", needle)
		}
	}
}

// TestHostResumesAnotherHostsErasure: a worker on host 0 dies right after
// the k-th entry of the journal, for every k of the erasure's journal; a
// worker on host 1, with its own state directory, resumes it from the
// ledger to one valid, complete certificate whose journal head is that of
// the journal the two hosts wrote together.
func TestHostResumesAnotherHostsErasure(t *testing.T) {
	for _, k := range []int{3, 6, 8, 12, 16, 18, 19} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			m := newMultiHost(t, 1)
			a := m.startWorker(t, 0, "host-0-a", fmt.Sprintf("AMNESIA_CRASH_AFTER_JOURNAL=%d", k))
			a.cmd.Wait()
			if ws, ok := a.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
				t.Skipf("the erasure's journal has fewer than %d entries: host 0 finished\n%s", k, a.out.String())
			}
			m.noPersonalData(t)
			time.Sleep(4500 * time.Millisecond) // host 0's lease runs out
			b := m.startWorker(t, 1, "host-1-b")
			if err := b.cmd.Wait(); err != nil {
				t.Fatalf("host 1: %v\n%s%s", err, b.out.String(), b.err.String())
			}
			if !strings.Contains(b.out.String(), "worker host-1-b: erasure "+saga.ID(m.traces[0].ID)) {
				t.Fatalf("host 1 did not run the erasure:\n%s", b.out.String())
			}
			m.checkDoneOnce(t)
			// The certificate names the journal both hosts wrote.
			id := saga.ID(m.traces[0].ID)
			b2, err := m.env.Durable().Certificate(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "c.json")
			os.WriteFile(p, b2, 0o600)
			jr, _ := predicateOf(t, certificatePayload(t, p))["journal"].(map[string]any)
			if head, _ := journalHead(t, readJournal(t, m.env.Durable(), id)); jr["head"] != head {
				t.Errorf("certificate journal head %v, the ledger's journal gives %s", jr["head"], head)
			}
			// Host 2 ran nothing: `verify <id>` finds the certificate in the
			// ledger, and `trace` names it as the proof of the erasure.
			if r := runBinary(t, nil, "", "--state", m.states[2], "verify", id, "--public-key", m.pub); r.code != 0 || !strings.Contains(r.stdout, "VALID certificate "+id) {
				t.Errorf("verify by id on another host: %s", r)
			}
			if _, err := os.Stat(filepath.Join(m.states[2], "certificates", id+".dsse.json")); err != nil {
				t.Errorf("host 2 has no copy of the certificate it read: %v", err)
			}
			if r := runBinary(t, nil, "host.subject.00@example.org\n", "--state", m.states[2], "trace", "-"); !strings.Contains(r.stderr+r.stdout, "already erased by "+id) || strings.Contains(r.stderr+r.stdout, "not in the ledger") {
				t.Errorf("trace of the erased subject on another host: %s", r)
			}
		})
	}
}

// TestHostWithAnotherConfigIsRefused: host 2's amnesia.yaml names another
// table for store docs. Its worker is refused with exit 24, naming the
// store and no value, before it claims anything; host 0's worker starts.
// After `config publish` on host 2, host 0 (the earlier configuration) is
// refused, and host 2 is accepted.
func TestHostWithAnotherConfigIsRefused(t *testing.T) {
	m := newMultiHost(t, 1)
	p := filepath.Join(m.states[2], "amnesia.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.ReplaceAll(string(b), "mh_docs", "mh_other_docs")
	if changed == string(b) {
		t.Fatal("host 2's amnesia.yaml does not name the table")
	}
	if err := os.WriteFile(p, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	drain := func(host int) binResult {
		return runBinary(t, nil, "", "--state", m.states[host], "worker", "--drain", "--poll", "100ms", "--id", fmt.Sprintf("cfg-%d", host))
	}
	r := drain(2)
	if r.code != exitConfigMismatch || !strings.Contains(r.stderr, "stores.docs") || strings.Contains(r.stderr, "mh_other_docs") {
		t.Fatalf("host 2 with another store table: want exit %d naming stores.docs and no value\n%s", exitConfigMismatch, r)
	}
	if js := m.jobs(t); len(js) != 1 || js[0].State != lineage.JobPending || js[0].Attempts != 0 {
		t.Fatalf("the refused host touched the queue: %+v", js)
	}
	if r := runBinary(t, nil, "", "--state", m.states[2], "config", "status"); r.code != exitConfigMismatch {
		t.Fatalf("config status on host 2: want exit %d\n%s", exitConfigMismatch, r)
	}
	if r := runBinary(t, nil, "", "--state", m.states[1], "config", "status"); r.code != 0 || !strings.Contains(r.stdout, "same") {
		t.Fatalf("config status on host 1\n%s", r)
	}
	if r := drain(0); r.code != 0 {
		t.Fatalf("host 0, with the installation's configuration\n%s", r)
	}
	// A worker of host 0 already running when host 2 publishes: it stops
	// at its next claim, with exit 24, by itself.
	running := exec.Command(amnesiaBin, "--state", m.states[0], "worker", "--poll", "100ms", "--id", "cfg-running")
	running.Env = cleanEnv()
	var runOut, runErr bytes.Buffer
	running.Stdout, running.Stderr = &runOut, &runErr
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- running.Wait() }()
	time.Sleep(time.Second)
	select {
	case err := <-exited:
		t.Fatalf("host 0's running worker exited before the publication: %v\n%s", err, runErr.String())
	default:
	}
	if r := runBinary(t, nil, "", "--state", m.states[2], "config", "publish"); r.code != 0 || !strings.Contains(r.stdout, "version 2") || !strings.Contains(r.stdout, "stores.docs") || !strings.Contains(r.stdout, "keeps answering its API with the earlier amnesia.yaml: restart it") {
		t.Fatalf("config publish on host 2\n%s", r)
	}
	select {
	case <-exited:
		if code := running.ProcessState.ExitCode(); code != exitConfigMismatch || !strings.Contains(runErr.String(), "version 2") {
			t.Fatalf("host 0's running worker after version 2 was published: exit %d, want %d\n%s", code, exitConfigMismatch, runErr.String())
		}
	case <-time.After(20 * time.Second):
		running.Process.Kill()
		<-exited
		t.Fatalf("host 0's running worker still runs 20s after version 2 was published\n%s", runErr.String())
	}
	if r := drain(0); r.code != exitConfigMismatch || !strings.Contains(r.stderr, "version 2") {
		t.Fatalf("host 0 after version 2 was published: want exit %d\n%s", exitConfigMismatch, r)
	}
	if r := drain(2); r.code != 0 {
		t.Fatalf("host 2 after it published its configuration\n%s", r)
	}
}
