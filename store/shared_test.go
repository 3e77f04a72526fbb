package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// naiveHolders is what DropShared's holder counts must equal: for each
// owner, each other record (by key, fields together) and the number of the
// owner's needles it holds (bytes.Contains; a needle the owner's record
// repeats counts each time, one that several fields of the holder hold
// counts once), the MaxSharedWith with the most (ties by key) and how many
// were left out.
func naiveHolders(ev map[string]*Evidence, records []struct {
	key string
	b   []byte
}) map[string]struct {
	with map[string]int
	more int
} {
	held := map[string]map[string]map[int]bool{} // owner -> holder -> needle indexes
	for o, e := range ev {
		for i, n := range e.Needles {
			if len(n) < 8 {
				continue
			}
			for _, r := range records {
				if r.key == "" || !bytes.Contains(r.b, n) {
					continue
				}
				if held[o] == nil {
					held[o] = map[string]map[int]bool{}
				}
				if held[o][r.key] == nil {
					held[o][r.key] = map[int]bool{}
				}
				held[o][r.key][i] = true
			}
		}
	}
	out := map[string]struct {
		with map[string]int
		more int
	}{}
	for o, hs := range held {
		keys := slices.Collect(maps.Keys(hs))
		slices.SortFunc(keys, func(a, b string) int {
			if len(hs[a]) != len(hs[b]) {
				return len(hs[b]) - len(hs[a])
			}
			if a < b {
				return -1
			}
			return 1
		})
		with := map[string]int{}
		for _, k := range keys[:min(len(keys), MaxSharedWith)] {
			with[k] = len(hs[k])
		}
		out[o] = struct {
			with map[string]int
			more int
		}{with, len(keys) - len(with)}
	}
	return out
}

// DropShared's holder bookkeeping (distinct needles searched once, their
// holders counted per owner after the scan, a partial selection of the top
// holders) names the same holders with the same counts as a plain
// nested-map count and a full sort, on random records that hold random runs
// of several owners' bytes, some passed as several fields of one key, some
// with no key, many tied; owners share windows with each other (a run of
// another owner's bytes, aligned to the windows' stride) and repeat their
// own, as template text does.
//
// Each case runs with the records searched in the caller's goroutine and
// spread over three workers a few records at a time: both must give the
// same evidence (needles kept, shared counts, holders).
func TestDropSharedHoldersMatchNaive(t *testing.T) {
	defer func(w, b, r int) { sharedWorkers, sharedBatchBytes, sharedBatchRecs = w, b, r }(sharedWorkers, sharedBatchBytes, sharedBatchRecs)
	sharedBatchBytes, sharedBatchRecs = 200, 2
	acrossOwners, repeated := 0, 0 // needles of several owners, needles an owner repeats
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		nOwners := 1 + r.IntN(4)
		src := map[string][]byte{}
		ev := map[string]*Evidence{}
		for o := 0; o < nOwners; o++ {
			b := make([]byte, 64+r.IntN(400))
			fill(b, seed*100+uint64(o))
			if o > 0 && r.IntN(2) == 0 {
				// A run of an earlier owner's bytes, at the same offset
				// modulo the stride: the two share those windows.
				prev := src[fmt.Sprintf("own-%d", r.IntN(o))]
				from := WindowStride * r.IntN(len(prev)/WindowStride)
				n := min(len(prev)-from, len(b)-from, WindowSize+WindowStride*r.IntN(8))
				if from < len(b) && n > 0 {
					copy(b[from:], prev[from:from+n])
				}
			}
			if r.IntN(3) == 0 {
				// A repeated run: the record holds some windows twice.
				run := append([]byte(nil), b[:WindowSize+WindowStride*r.IntN(4)]...)
				b = b[:len(b)/WindowStride*WindowStride] // the runs start on the stride
				b = append(b, run...)
				b = append(b, run...)
			}
			k := fmt.Sprintf("own-%d", o)
			src[k] = b
			e := &Evidence{Key: k}
			e.AddWindows(b)
			ev[k] = e
		}
		byBytes := map[string]map[string]int{} // needle -> owner -> times
		for k, e := range ev {
			for _, n := range e.Needles {
				if byBytes[string(n)] == nil {
					byBytes[string(n)] = map[string]int{}
				}
				byBytes[string(n)][k]++
			}
		}
		for _, per := range byBytes {
			if len(per) > 1 {
				acrossOwners++
			}
			for _, times := range per {
				if times > 1 {
					repeated++
				}
			}
		}
		owners := slices.Sorted(maps.Keys(src))
		var records []struct {
			key string
			b   []byte
		}
		nHolders := 1 + r.IntN(3*MaxSharedWith)
		for h := 0; h < nHolders; h++ {
			key := fmt.Sprintf("rec-%03d", r.IntN(nHolders)) // repeated keys: several fields of one record
			if r.IntN(10) == 0 {
				key = ""
			}
			var b []byte
			for p := 0; p < 1+r.IntN(3); p++ {
				s := src[owners[r.IntN(len(owners))]]
				from := r.IntN(len(s))
				to := from + r.IntN(len(s)-from+1)
				junk := make([]byte, r.IntN(40))
				fill(junk, seed*1000+uint64(h*7+p))
				b = append(append(b, junk...), s[from:to]...)
			}
			records = append(records, struct {
				key string
				b   []byte
			}{key, b})
			// Copies under other keys: holders tied on their counts, more
			// of them than are named.
			if r.IntN(3) == 0 {
				for c := 0; c < MaxSharedWith/2; c++ {
					records = append(records, struct {
						key string
						b   []byte
					}{fmt.Sprintf("copy-%03d-%d", h, c), b})
				}
			}
		}
		want := naiveHolders(ev, records)
		var results []map[string]*Evidence
		for _, workers := range []int{1, 3} {
			sharedWorkers = workers
			got := map[string]*Evidence{}
			for k, e := range ev {
				got[k] = &Evidence{Key: e.Key, Needles: slices.Clone(e.Needles)}
			}
			err := DropShared(context.Background(), got, func(fn func(string, []byte) error) error {
				for _, rec := range records {
					if err := fn(rec.key, rec.b); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range owners {
				e := got[o]
				w := want[o]
				if !maps.Equal(e.SharedWith, w.with) && !(len(e.SharedWith) == 0 && len(w.with) == 0) || e.SharedWithMore != w.more {
					t.Fatalf("seed %d, %d workers, owner %s: SharedWith %v (+%d), want %v (+%d)", seed, workers, o, e.SharedWith, e.SharedWithMore, w.with, w.more)
				}
			}
			results = append(results, got)
		}
		for _, o := range owners {
			a, b := results[0][o], results[1][o]
			if a.Shared != b.Shared || !slices.EqualFunc(a.Needles, b.Needles, bytes.Equal) {
				t.Fatalf("seed %d owner %s: alone %d needles kept, %d shared; with 3 workers %d kept, %d shared", seed, o, len(a.Needles), a.Shared, len(b.Needles), b.Shared)
			}
		}
	}
	if acrossOwners == 0 || repeated == 0 {
		t.Fatalf("the records made %d needles held by several owners and %d repeated within one: want some of each", acrossOwners, repeated)
	}
}

// Only records that hold a needle are numbered as holders: a store of
// many records that hold none costs DropShared no bookkeeping per record.
func TestDropSharedNumbersOnlyHolders(t *testing.T) {
	b := make([]byte, 200)
	fill(b, 3)
	e := &Evidence{}
	e.AddWindows(b)
	for _, workers := range []int{1, 3} {
		defer func(w, bb, r int) { sharedWorkers, sharedBatchBytes, sharedBatchRecs = w, bb, r }(sharedWorkers, sharedBatchBytes, sharedBatchRecs)
		sharedWorkers, sharedBatchBytes, sharedBatchRecs = workers, 1<<10, 7
		ds := distinctNeedles(map[string]*Evidence{"a": e})
		_, hb, err := searchOthers(context.Background(), ds.set, newSpans(ds.set), func(fn func(string, []byte) error) error {
			for i := 0; i < 1000; i++ {
				rec := make([]byte, 64)
				fill(rec, uint64(1000+i))
				if i%100 == 0 {
					rec = append(rec, b[40:120]...) // holds some of a's windows
				}
				if err := fn(fmt.Sprintf("r%04d", i), rec); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(hb.keys) != 10 || len(hb.ids) != 10 {
			t.Errorf("%d workers: %d holders numbered, want the 10 records that hold a window", workers, len(hb.keys))
		}
	}
}

// A read of the other records that fails (or a cancelled context) midway
// returns its error, leaves the evidence as it was, and leaves no worker
// running.
func TestDropSharedStopsOnError(t *testing.T) {
	defer func(w, bb, r int) { sharedWorkers, sharedBatchBytes, sharedBatchRecs = w, bb, r }(sharedWorkers, sharedBatchBytes, sharedBatchRecs)
	sharedBatchBytes, sharedBatchRecs = 256, 3
	before := runtime.NumGoroutine()
	b := make([]byte, 200)
	fill(b, 4)
	boom := errors.New("store went away")
	for _, workers := range []int{1, 4} {
		sharedWorkers = workers
		e := &Evidence{}
		e.AddWindows(b)
		n := len(e.Needles)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for _, stop := range []string{"error", "cancel"} {
			err := DropShared(ctx, map[string]*Evidence{"a": e}, func(fn func(string, []byte) error) error {
				for i := 0; ; i++ {
					if i == 50 {
						if stop == "error" {
							return boom
						}
						cancel()
					}
					if err := fn(fmt.Sprintf("r%d", i), b[i%100:]); err != nil {
						return err
					}
				}
			})
			want := boom
			if stop == "cancel" {
				want = context.Canceled
			}
			if !errors.Is(err, want) {
				t.Fatalf("%d workers, %s: err %v, want %v", workers, stop, err, want)
			}
			if len(e.Needles) != n || e.Shared != 0 || e.SharedWith != nil {
				t.Fatalf("%d workers, %s: evidence changed (%d of %d needles, %d shared)", workers, stop, len(e.Needles), n, e.Shared)
			}
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after, %d before: workers left running", g, before)
	}
}
