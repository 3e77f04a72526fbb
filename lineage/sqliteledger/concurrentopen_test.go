package sqliteledger_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
)

// Several processes (here: connections of their own) opening a ledger
// that does not exist yet, at the same moment, all open it: one creates
// it, the others find it being created and read what it wrote.
func TestConcurrentOpenOfNewLedger(t *testing.T) {
	ctx := context.Background()
	for round := 0; round < 10; round++ {
		path := filepath.Join(t.TempDir(), "ledger.db")
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := sqliteledger.Open(ctx, path)
				if err == nil {
					err = l.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, opener %d: %v", round, i, err)
			}
		}
		l, err := sqliteledger.OpenExisting(ctx, path)
		if err != nil {
			t.Fatalf("round %d: the ledger they made: %v", round, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(fmt.Sprint(err))
		}
	}
}
