package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
)

// RunRequests runs the checks of lineage.RequestStore; both handles (two
// connections to one ledger) must implement it.
func RunRequests(t *testing.T, open PairOpener) {
	stores := func(t *testing.T) (lineage.RequestStore, lineage.RequestStore) {
		a, b := open(t)
		ra, okA := a.(lineage.RequestStore)
		rb, okB := b.(lineage.RequestStore)
		if !okA || !okB {
			t.Fatalf("%T does not implement lineage.RequestStore", a)
		}
		return ra, rb
	}
	t.Run("InsertGetListInOrder", func(t *testing.T) {
		a, b := stores(t)
		ctx := context.Background()
		for i := 0; i < 3; i++ {
			r := lineage.RequestRow{ID: fmt.Sprintf("req_%d", i), Scope: "default", State: "received", Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}
			if err := a.InsertRequest(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.InsertRequest(ctx, lineage.RequestRow{ID: "req_1", Scope: "x", State: "received", Body: []byte(`{}`)}); !errors.Is(err, lineage.ErrRequestExists) {
			t.Fatalf("second insert of req_1: %v, want ErrRequestExists", err)
		}
		got, err := b.GetRequest(ctx, "req_1")
		if err != nil || got.Version != 1 || string(got.Body) != `{"n":1}` || got.Scope != "default" {
			t.Fatalf("get req_1 = %+v, %v", got, err)
		}
		if _, err := b.GetRequest(ctx, "req_none"); !errors.Is(err, lineage.ErrNotFound) {
			t.Fatalf("get missing: %v, want ErrNotFound", err)
		}
		list, err := b.ListRequests(ctx)
		if err != nil || len(list) != 3 || list[0].ID != "req_0" || list[2].ID != "req_2" {
			t.Fatalf("list = %+v, %v", list, err)
		}
	})
	t.Run("CompareAndSetOnlyOneWinner", func(t *testing.T) {
		a, b := stores(t)
		ctx := context.Background()
		if err := a.InsertRequest(ctx, lineage.RequestRow{ID: "req_cas", Scope: "default", State: "previewed", Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, lost := 0, 0
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				s := a
				if i%2 == 1 {
					s = b
				}
				err := s.UpdateRequest(ctx, lineage.RequestRow{ID: "req_cas", Scope: "default", State: "queued", TraceID: "t", Version: 1, Body: []byte(fmt.Sprintf(`{"w":%d}`, i))})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.Is(err, lineage.ErrRequestChanged):
					lost++
				default:
					t.Errorf("update: %v", err)
				}
			}(i)
		}
		wg.Wait()
		if won != 1 || lost != 7 {
			t.Fatalf("concurrent updates of one version: %d won, %d lost; want exactly 1 winner", won, lost)
		}
		got, err := b.GetRequest(ctx, "req_cas")
		if err != nil || got.Version != 2 || got.State != "queued" || got.TraceID != "t" {
			t.Fatalf("after update: %+v, %v", got, err)
		}
		if err := a.UpdateRequest(ctx, lineage.RequestRow{ID: "req_none", State: "x", Version: 1, Body: []byte(`{}`)}); !errors.Is(err, lineage.ErrRequestChanged) {
			t.Fatalf("update of a missing request: %v", err)
		}
	})
}
