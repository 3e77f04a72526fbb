package saga_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// trusted is the installation's own key, as reverify trusts it.
func (f *fixture) trusted() certificate.VerifyOptions {
	return certificate.VerifyOptions{Keys: []certificate.TrustedKey{{Public: f.dir.Key.Public().(ed25519.PublicKey)}}}
}

func (f *fixture) reverify(t *testing.T, path string, stores map[string]store.Store) (*saga.Result, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o, err := saga.CheckReverify(context.Background(), f.dir, saga.DurableFor(f.dir, f.ledger), b, nil)
	if err != nil {
		return nil, err
	}
	return saga.Reverify(context.Background(), &saga.Reverification{Dir: f.dir, Ledger: f.ledger, Stores: stores, Original: o})
}

// linkOf returns what a re-verification of the certificate at path must
// link to: its id, payload digest and log index, read from the file.
func linkOf(t *testing.T, path string) certificate.ReverifyLink {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bd, err := certificate.DecodeBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := certificate.Payload(bd.DSSEEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	st, err := certificate.Parse(bd.DSSEEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(payload)
	return certificate.ReverifyLink{CertificateID: st.Predicate.CertificateID, PayloadSHA256: hex.EncodeToString(sum[:]), LogIndex: bd.LogEntry.LogIndex}
}

// A re-verification of an untouched erasure verifies, links to the first
// certificate, is logged, and says VERIFIED(logical) by id for every erased
// artifact: never physical.
func TestReverifyLinksAndNeverClaimsPhysical(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 6, 4)
	stores := map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}
	tr := f.trace(t, 0)
	res, err := f.erase(t, tr, stores, nil)
	if err != nil {
		t.Fatal(err)
	}
	op := res.Statement.Predicate
	if !op.Reverifiable || !strings.Contains(op.ReverifyNote, "by id") || !strings.Contains(op.ReverifyNote, "byte scan cannot be repeated") {
		t.Fatalf("erasure certificate: reverifiable %v, note %q", op.Reverifiable, op.ReverifyNote)
	}
	if op.Counts.VerifiedPhysical == 0 {
		t.Fatalf("the erasure reached no physical verification: the test would not show that reverify drops it")
	}
	if len(tr.Mentions) == 0 {
		t.Logf("note: person 0 has no third-party mentions in this corpus")
	}

	rv, err := f.reverify(t, res.CertificatePath, stores)
	if err != nil {
		t.Fatal(err)
	}
	if rv.ID == res.ID || !strings.HasPrefix(rv.ID, "rv-") {
		t.Errorf("re-verification id %s (erasure %s)", rv.ID, res.ID)
	}
	b, err := os.ReadFile(rv.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := certificate.VerifyBundle(ctx, b, f.trusted())
	if err != nil {
		t.Fatalf("the re-verification certificate does not verify: %v", err)
	}
	p := chk.Statement.Predicate
	want := linkOf(t, res.CertificatePath)
	if p.Reverifies == nil || *p.Reverifies != want {
		t.Fatalf("reverifies = %+v, want %+v", p.Reverifies, want)
	}
	if chk.LogIndex <= want.LogIndex {
		t.Errorf("re-verification logged at %d, not after the certificate it re-verifies (%d)", chk.LogIndex, want.LogIndex)
	}
	if p.Trace != op.Trace || chk.Statement.Subject[0].Digest["sha256"] != tr.ID || p.SubjectRef != op.SubjectRef || p.Reason != op.Reason {
		t.Errorf("re-verification is not about the same erasure: trace %+v subject %s", p.Trace, p.SubjectRef)
	}
	if !p.Complete || p.Counts.VerifiedPhysical != 0 || p.Counts.VerifiedLogical != len(tr.Artifacts) || p.Counts.NeedsHuman != op.Counts.NeedsHuman {
		t.Errorf("counts %+v complete %v, want %d VERIFIED(logical), none physical", p.Counts, p.Complete, len(tr.Artifacts))
	}
	for i, a := range p.Artifacts {
		if a.ID != op.Artifacts[i].ID {
			t.Fatalf("artifact %d is %s, the original's is %s", i, a.ID, op.Artifacts[i].ID)
		}
		if a.Outcome == certificate.NeedsHuman {
			continue
		}
		if a.Outcome != certificate.Verified || a.Level != certificate.LevelLogical || a.Method != saga.MethodReverifyByID ||
			a.Measurement == nil || a.Measurement.Physical != nil || a.Measurement.Logical.ByID || !strings.Contains(a.Reason, "byte scan cannot be repeated") {
			t.Errorf("artifact %s: %s(%s) method %q reason %q", a.ID, a.Outcome, a.Level, a.Method, a.Reason)
		}
	}
	for _, s := range p.DeclaredScope {
		if s.Touched && (s.Residue != "UNVERIFIED-physical-not-measured" || !strings.Contains(s.Evidence, "database files")) {
			t.Errorf("store %s: residue %s (%s)", s.Name, s.Residue, s.Evidence)
		}
	}
	physical := false
	for _, x := range p.OutOfScope {
		physical = physical || strings.Contains(x.What, "physical level")
	}
	if !physical {
		t.Errorf("out_of_scope does not exclude the physical level: %+v", p.OutOfScope)
	}
	if !p.Reverifiable {
		t.Errorf("the re-verification is not itself re-verifiable: %s", p.ReverifyNote)
	}
	if _, err := os.Stat(filepath.Join(f.dir.ErasureDir(res.ID), "reverify-"+rv.ID+".jsonl")); err != nil {
		t.Errorf("no journal of the re-verification: %v", err)
	}

	// A re-verification of the re-verification links to it.
	time.Sleep(time.Millisecond)
	rv2, err := f.reverify(t, rv.CertificatePath, stores)
	if err != nil {
		t.Fatal(err)
	}
	if l := rv2.Statement.Predicate.Reverifies; *l != linkOf(t, rv.CertificatePath) || rv2.ID == rv.ID {
		t.Errorf("second re-verification %s links to %+v", rv2.ID, l)
	}
}

// A record restored from a backup after the erasure is RESIDUAL in the
// re-verification, which is then incomplete.
func TestReverifyFindsRestoredRecord(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 5, 3)
	stores := map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}
	tr := f.trace(t, 2)
	res, err := f.erase(t, tr, stores, nil)
	if err != nil {
		t.Fatal(err)
	}
	var restored lineage.TraceArtifact
	for _, a := range tr.Artifacts {
		if a.Store == "docs" {
			restored = a
			break
		}
	}
	// The restore writes the store directly: capture refuses erased keys.
	if err := f.rawD.Put(ctx, sqlitedoc.Record{ID: restored.Key, Kind: sqlitedoc.KindDocument, Text: "restored from last week's backup"}); err != nil {
		t.Fatal(err)
	}
	rv, err := f.reverify(t, res.CertificatePath, stores)
	if err != nil {
		t.Fatal(err)
	}
	p := rv.Statement.Predicate
	if p.Complete || p.Counts.Residual != 1 || p.Counts.VerifiedLogical != len(tr.Artifacts)-1 {
		t.Fatalf("counts %+v complete %v, want exactly the restored record RESIDUAL", p.Counts, p.Complete)
	}
	for _, a := range p.Artifacts {
		if a.ID == restored.ID && (a.Outcome != certificate.Residual || !a.Measurement.Logical.ByID || !strings.Contains(a.Reason, "lookup by id")) {
			t.Errorf("restored record: %s %q", a.Outcome, a.Reason)
		}
	}
	for _, s := range p.DeclaredScope {
		if s.Name == "docs" && s.Residue != "RESIDUAL" {
			t.Errorf("docs residue %s (%s)", s.Residue, s.Evidence)
		}
	}
	b, _ := os.ReadFile(rv.CertificatePath)
	if _, err := certificate.VerifyBundle(ctx, b, f.trusted()); err != nil {
		t.Errorf("an incomplete re-verification must still verify: %v", err)
	}
}

// A certificate that says reverifiable=false is refused, and so is a
// tampered one; CheckReverify takes no store, so neither reaches a probe.
func TestReverifyRefuses(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 5, 3)
	down := fmt.Errorf("open vectors: %w", store.ErrUnavailable)
	res, err := f.erase(t, f.trace(t, 1), map[string]store.Store{"docs": f.rawD}, map[string]error{"vectors": down})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if p.Reverifiable || !strings.Contains(p.ReverifyNote, "vectors could not be opened") {
		t.Fatalf("reverifiable %v with a store down: %q", p.Reverifiable, p.ReverifyNote)
	}
	b, err := os.ReadFile(res.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := saga.CheckReverify(ctx, f.dir, nil, b, nil); !errors.Is(err, saga.ErrNotReverifiable) {
		t.Errorf("CheckReverify of reverifiable=false: %v, want ErrNotReverifiable", err)
	}

	res2, err := f.erase(t, f.trace(t, 3), map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(res2.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	// Flip one character of the signed payload (inside the base64).
	i := strings.Index(string(good), `"payload": "`) + len(`"payload": "`) + 40
	bad := append([]byte(nil), good...)
	if bad[i] == 'A' {
		bad[i] = 'B'
	} else {
		bad[i] = 'A'
	}
	if _, err := saga.CheckReverify(ctx, f.dir, nil, bad, nil); !errors.Is(err, certificate.ErrSignature) && !errors.Is(err, certificate.ErrMalformed) {
		t.Errorf("CheckReverify of a tampered certificate: %v", err)
	}
	// Another installation's key.
	_, other, _ := ed25519.GenerateKey(nil)
	if _, err := saga.CheckReverify(ctx, f.dir, nil, good, []certificate.TrustedKey{{Public: other.Public().(ed25519.PublicKey)}}); !errors.Is(err, certificate.ErrWrongKey) {
		t.Errorf("CheckReverify with another key: %v", err)
	}
}

// On PostgreSQL the re-verification measures the table's dead tuples (no
// needles needed) and still says VERIFIED(logical) only; a restored row is
// RESIDUAL.
func TestReverifyPostgres(t *testing.T) {
	dsn := ledgertest.PostgresDSN(t) // a database of its own; skips without a server
	ctx := context.Background()
	if c, err := pgx.Connect(ctx, dsn); err == nil {
		_, err = c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pgstattuple")
		c.Close(ctx)
		if err != nil {
			t.Logf("pgstattuple: %v", err)
		}
	}
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "pgdocs", Type: pgdoc.Type, DSN: dsn, Table: fmt.Sprintf("reverify_docs_%d", time.Now().UnixNano()%1e9), Reclaim: "full"}}
	sd, err := state.Init(filepath.Join(t.TempDir(), "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := sd.Config.OpenStore(ctx, cfg.Stores[0], true)
	if err != nil {
		t.Fatal(err)
	}
	docs := s.(*pgdoc.Store)
	defer func() {
		docs.Exec(ctx, "DROP TABLE IF EXISTS "+docs.Table())
		docs.Close()
	}()
	for p := 0; p < 2; p++ {
		owner, _ := sd.Keyer.Key(cfg.Scope, fmt.Sprintf("person-%d@example.org", p))
		for d := 0; d < 3; d++ {
			key := fmt.Sprintf("p%d-d%d", p, d)
			must(t, l.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(sd.Keyer, cfg.Scope, "pgdocs", key), Scope: cfg.Scope, Subject: owner, Kind: lineage.KindSource, Store: "pgdocs", Key: key, Digest: "d"}))
			must(t, docs.Put(ctx, pgdoc.Record{ID: key, Subject: owner.String(), Content: fmt.Sprintf("Person %d, note %d: called about the invoice on day %d.", p, d, 10+d)}))
		}
	}
	target, _ := sd.Keyer.Key(cfg.Scope, "person-1@example.org")
	v, err := l.View(ctx, cfg.Scope, target)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]store.Store{"pgdocs": docs}
	res, err := saga.Run(ctx, &saga.Erasure{Dir: sd, Ledger: l, Stores: stores, Trace: tr, Reason: "PG-RV"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Statement.Predicate.Reverifiable {
		t.Fatalf("not re-verifiable: %s", res.Statement.Predicate.ReverifyNote)
	}
	reverify := func() *certificate.Predicate {
		t.Helper()
		b, err := os.ReadFile(res.CertificatePath)
		if err != nil {
			t.Fatal(err)
		}
		o, err := saga.CheckReverify(ctx, sd, nil, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		rv, err := saga.Reverify(ctx, &saga.Reverification{Dir: sd, Ledger: l, Stores: stores, Original: o})
		if err != nil {
			t.Fatal(err)
		}
		return &rv.Statement.Predicate
	}
	p := reverify()
	st := p.DeclaredScope[0]
	if !p.Complete || p.Counts.VerifiedLogical != len(tr.Artifacts) || p.Counts.VerifiedPhysical != 0 || !strings.Contains(st.Evidence, "dead tuples") {
		t.Errorf("counts %+v; store %s (%s)", p.Counts, st.Residue, st.Evidence)
	}
	t.Logf("store after a full reclaim: %s (%s)", st.Residue, st.Evidence)
	pgstattuple := !strings.Contains(st.Evidence, "not measured")
	if pgstattuple && st.Residue != "UNVERIFIED-physical-not-measured" {
		t.Errorf("after a full reclaim: %s (%s)", st.Residue, st.Evidence)
	}

	// Another row deleted since: a dead tuple the store cannot attribute;
	// and one erased row restored.
	must(t, docs.Exec(ctx, "DELETE FROM "+docs.Table()+" WHERE id = 'p0-d0'"))
	p = reverify()
	st = p.DeclaredScope[0]
	if !p.Complete || (pgstattuple && st.Residue != "UNVERIFIED-dead-tuples-remain") {
		t.Errorf("after another delete: counts %+v; store %s (%s)", p.Counts, st.Residue, st.Evidence)
	}
	must(t, docs.Put(ctx, pgdoc.Record{ID: tr.Plan[0].Delete[0], Content: "restored from backup"}))
	p = reverify()
	st = p.DeclaredScope[0]
	if p.Complete || p.Counts.Residual != 1 || st.Residue != "RESIDUAL" {
		t.Errorf("after a restore: counts %+v; store %s (%s)", p.Counts, st.Residue, st.Evidence)
	}
	if pgstattuple && !strings.Contains(st.Evidence, "pgstattuple") {
		t.Errorf("dead tuples not reported: %s", st.Evidence)
	}
	t.Logf("store after a restore: %s (%s)", st.Residue, st.Evidence)
}

// After a key rotation, a certificate signed by the earlier key is still
// the installation's own: reverify trusts the keyring and signs the new
// certificate with the current key.
func TestReverifyAfterKeyRotation(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 4, 3)
	stores := map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}
	res, err := f.erase(t, f.trace(t, 1), stores, nil)
	if err != nil {
		t.Fatal(err)
	}
	nk, old, err := f.dir.RotateKey(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rv, err := f.reverify(t, res.CertificatePath, stores)
	if err != nil {
		t.Fatalf("reverify of a certificate signed by the earlier key: %v", err)
	}
	if got := rv.Statement.Predicate.KeyID; got != nk.ID || got == old.ID || res.Statement.Predicate.KeyID != old.ID {
		t.Errorf("re-verification signed by %s; new key %s, old key %s", got, nk.ID, old.ID)
	}
	b, _ := os.ReadFile(rv.CertificatePath)
	if _, err := certificate.VerifyBundle(ctx, b, f.trusted()); err != nil {
		t.Errorf("the re-verification does not verify with the current key: %v", err)
	}
}

// A re-verification of a re-verification of a follow-up erasure (one that
// continued an incomplete first attempt: its id is AttemptID, not ID of the
// trace) reads the marks of that follow-up, as the first re-verification
// did: the chain of links leads to it. Without the installation's
// certificates only the link to an erasure certificate can be followed,
// and the refusal says what to re-verify instead.
func TestReverifyChainOfFollowUp(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	first, err := f.runStoresDown(t, tr)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.run(t, &saga.Erasure{Stores: f.stores(), Trace: f.trace(t, 1), Reason: "TICKET-2"})
	if err != nil {
		t.Fatal(err)
	}
	if second.Follows != first.ID || second.ID == saga.ID(tr.ID) {
		t.Fatalf("the second run is not a follow-up: %s follows %q", second.ID, second.Follows)
	}
	rv1, err := f.reverify(t, second.CertificatePath, f.stores())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	rv2, err := f.reverify(t, rv1.CertificatePath, f.stores())
	if err != nil {
		t.Fatalf("re-verifying the re-verification of a follow-up: %v", err)
	}
	p1, p2 := rv1.Statement.Predicate, rv2.Statement.Predicate
	if p2.Counts != p1.Counts || p2.Counts.VerifiedLogical == 0 || !p2.Complete {
		t.Errorf("second re-verification counts %+v (complete %v), the first's %+v", p2.Counts, p2.Complete, p1.Counts)
	}
	b, err := os.ReadFile(rv1.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	o, err := saga.CheckReverify(ctx, f.dir, saga.DurableFor(f.dir, f.ledger), b, nil)
	if err != nil || o.ErasureID != second.ID {
		t.Errorf("CheckReverify of %s: erasure %q, %v; want %s", rv1.ID, o.ErasureID, err, second.ID)
	}
	b, err = os.ReadFile(rv2.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := saga.CheckReverify(ctx, f.dir, saga.DurableFor(f.dir, f.ledger), b, nil); err != nil || o.ErasureID != second.ID {
		t.Errorf("CheckReverify of %s: %+v, %v; want erasure %s", rv2.ID, o, err, second.ID)
	}
	if _, err := saga.CheckReverify(ctx, f.dir, nil, b, nil); err == nil || !strings.Contains(err.Error(), "re-verify the erasure certificate") {
		t.Errorf("CheckReverify of %s without the certificates: %v", rv2.ID, err)
	}
}
