package saga_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/transparency"
)

// twoWrites is the real SQLite ledger seen only through lineage.Ledger and
// transparency.Store: a ledger that cannot suppress and log in one
// transaction (lineage.LoggedSuppressor) nor append and checkpoint in one
// (transparency.AppendCheckpointer).
type twoWrites struct {
	lineage.Ledger
	transparency.Store
}

// An erasure writes the same log through a ledger that does the suppress
// step's and the publish step's ledger writes in one transaction each, and
// through one that needs two: the erasure-started event and the
// certificate's leaf are logged, the certificate verifies with its
// inclusion proof, and the checkpoint it carries is the newest stored.
func TestLedgerWritesOneOrTwoTransactions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 4, 2)
	var _ lineage.LoggedSuppressor = f.ledger
	var _ transparency.AppendCheckpointer = f.ledger
	stores := map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}
	for i, l := range []lineage.Ledger{f.ledger, twoWrites{f.ledger, f.ledger}} {
		if _, one := l.(lineage.LoggedSuppressor); one != (i == 0) {
			t.Fatalf("ledger %d: LoggedSuppressor = %v", i, one)
		}
		res, err := saga.Run(ctx, &saga.Erasure{Dir: f.dir, Ledger: l, Stores: stores, Trace: f.trace(t, i+1), Reason: "TICKET-1"})
		if err != nil || !res.Complete() {
			t.Fatalf("ledger %d: %v, %+v", i, err, res)
		}
		b, err := os.ReadFile(res.CertificatePath)
		if err != nil {
			t.Fatal(err)
		}
		chk, err := certificate.VerifyBundle(ctx, b, f.trusted())
		if err != nil {
			t.Fatalf("ledger %d: certificate does not verify: %v", i, err)
		}
		bu, _ := certificate.DecodeBundle(b)
		n, _ := f.ledger.LogSize(ctx)
		if want := int64(2 * (i + 1)); n != want || bu.LogEntry.LogIndex != want-1 {
			t.Errorf("ledger %d: log of %d leaves, certificate at %d; want %d leaves, the certificate last (check %+v)", i, n, bu.LogEntry.LogIndex, want, chk)
		}
		latest, err := f.ledger.Checkpoint(ctx, -1)
		if err != nil || !strings.HasPrefix(bu.LogEntry.Checkpoint, string(latest[:strings.Index(string(latest), "\n\n")])) {
			t.Errorf("ledger %d: the certificate's checkpoint is not the newest stored: %v", i, err)
		}
		leaves, err := f.ledger.LogLeaves(ctx, n-2, n)
		if err != nil || transparency.LeafKind(leaves[0]) == "" || !strings.Contains(string(leaves[0]), "erasure-started\n"+res.ID+"\n") {
			t.Errorf("ledger %d: leaf %d is not the erasure-started event of %s: %q, %v", i, n-2, res.ID, leaves, err)
		}
		st, err := f.dir.LedgerState()
		if err != nil || st == nil || st.Size != n {
			t.Errorf("ledger %d: ledger-state.json records %+v, %v; want size %d", i, st, err, n)
		}
	}
}
