package saga

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	"github.com/amnesia-dev/amnesia/store"
)

// A batch (RunBatch) shares, per store, the reads every erasure of it would
// otherwise repeat: the evidence read, the byte scan before deletion and the
// byte scan after reclaim. Each is done once, by the first erasure of the
// batch whose step needs it, for every erasure of the batch whose step has
// not finished yet (a resumed batch leaves out the erasures that journaled
// that step), and each erasure keeps only the part of it for its own keys:
// its journal, sealed evidence and certificate hold what they would hold had
// it run alone. A record key belongs to one erasure of a batch (a record is
// owned by one subject); a key that two erasures both list gets the same
// evidence and findings in both.
//
// What changes with sharing: the evidence of the whole batch is read before
// any erasure of it deletes, so a window that two erasures' records hold
// (and no record outside the batch) stays a needle of both, where read one
// erasure at a time it was set apart as shared by the first erasure and kept
// by the second. Finding it after the deletion is then residue of both: the
// bytes can only be one of theirs.

// batchShare is what the erasures of one RunBatch share.
type batchShare struct {
	runners []*runner
	mu      sync.Mutex
	ev      map[string]*sharedEvidence // store -> the batch's evidence
	scans   map[string]*sharedScan     // step:store -> the batch's byte scan
	dels    map[string]*sharedDelete   // store -> the batch's delete
	// pend is which erasures will run a shared step ("evidence:" or
	// "probe:" and the store), taken (snapshot) before the phase that runs
	// it: the erasures of a phase run concurrently (RunBatch), so the one
	// that reads or scans for all of them reads no other erasure's journal
	// while that erasure writes it. For "probe:", the erasure's evidence
	// (loaded before the phase; absent when it could not be).
	pend map[string]map[*runner]map[string]*store.Evidence
	// owners are the owners (subject keys, "" when the ledger does not
	// know the record) of the records that share windows with the
	// batch's, as the erasures' evidence steps looked them up
	// (lookUpOwners): the records of a template hold windows of many
	// erasures of a window, each looked up once.
	owners map[ownerKey]string
	// sets is, per store, the needle set of the last byte scan for the
	// batch (needleSet): the scan after reclaim looks for the same needles
	// as the scan before deletion when no erasure dropped out between.
	sets map[string]*unionSet
}

type ownerKey struct{ scope, store, key string }

// batchOwnerCache: the erasures of a batch share their owner lookups
// (tests turn it off to compare).
var batchOwnerCache = true

// owner returns the owner of key that an erasure of the batch looked up
// (false outside a batch, or when none did).
func (b *batchShare) owner(scope, st, key string) (string, bool) {
	if b == nil || !batchOwnerCache {
		return "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.owners[ownerKey{scope, st, key}]
	return o, ok
}

// setOwners keeps the owners of keys, as looked holds them.
func (b *batchShare) setOwners(scope, st string, keys []string, looked map[string]string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owners == nil {
		b.owners = map[ownerKey]string{}
	}
	for _, k := range keys {
		b.owners[ownerKey{scope, st, k}] = looked[k]
	}
}

// unionSet is a needle set with the evidence it was built from: each key's
// Evidence and its needles as they were (the slices, not copies of their
// bytes: needles are never written once made).
type unionSet struct {
	ev  map[string]*store.Evidence
	was map[string][][]byte
	set *store.NeedleSet
}

// builtFrom reports whether ev holds exactly the needles u was built from:
// the same keys, each with the same needle slices in the same order.
func (u *unionSet) builtFrom(ev map[string]*store.Evidence) bool {
	if len(ev) != len(u.ev) {
		return false
	}
	for k, e := range ev {
		was, ok := u.was[k]
		if !ok || u.ev[k] != e || len(was) != len(e.Needles) {
			return false
		}
		for i, n := range e.Needles {
			if len(n) != len(was[i]) || unsafe.SliceData(n) != unsafe.SliceData(was[i]) {
				return false
			}
		}
	}
	return true
}

// needleSet returns the needle set of union, the evidence of the
// erasures a byte scan of st covers: the set built for the batch's
// previous scan of st when union holds the same needles (building one for
// a window of many subjects takes a while), otherwise a new one.
func (b *batchShare) needleSet(st string, union map[string]*store.Evidence) *store.NeedleSet {
	b.mu.Lock()
	u := b.sets[st]
	b.mu.Unlock()
	if u != nil && u.builtFrom(union) {
		return u.set
	}
	u = &unionSet{ev: union, was: make(map[string][][]byte, len(union)), set: store.NewNeedleSet(union)}
	for k, e := range union {
		u.was[k] = slices.Clone(e.Needles)
	}
	b.mu.Lock()
	if b.sets == nil {
		b.sets = map[string]*unionSet{}
	}
	b.sets[st] = u
	b.mu.Unlock()
	return u.set
}

// snapshot records in b.pend which erasures still run step on each of their
// stores (runner.pending); for "probe" it loads their evidence too. It runs
// before the phase that runs step, while no erasure of b runs.
func (b *batchShare) snapshot(ctx context.Context, step string) {
	if b.pend == nil {
		b.pend = map[string]map[*runner]map[string]*store.Evidence{}
	}
	for _, o := range b.runners {
		for st := range o.keys {
			if !o.pending(step, st) {
				continue
			}
			var ev map[string]*store.Evidence
			if step == "probe" {
				var err error
				if ev, err = o.evidence(ctx, st); err != nil {
					ev = nil // o's own probe step fails on it, and scans alone if it gets here
				}
			}
			m := b.pend[step+":"+st]
			if m == nil {
				m = map[*runner]map[string]*store.Evidence{}
				b.pend[step+":"+st] = m
			}
			m[o] = ev
		}
	}
}

// pendingAt reports whether o was to run step on st when the phase began
// (snapshot), with the evidence loaded for it.
func (b *batchShare) pendingAt(o *runner, step, st string) (map[string]*store.Evidence, bool) {
	ev, ok := b.pend[step+":"+st][o]
	return ev, ok
}

type sharedDelete struct {
	once sync.Once
	keys map[string]bool // keys deleted
	err  error
}

type sharedEvidence struct {
	once sync.Once
	ev   map[string]*store.Evidence
	err  error
}

type sharedScan struct {
	once sync.Once
	keys map[string]bool // keys scanned for
	rep  store.ScanReport
	err  error
}

// entry returns m[key] (one of b's maps), made under b.mu if absent.
func entry[T any](b *batchShare, m map[string]*T, key string) *T {
	b.mu.Lock()
	defer b.mu.Unlock()
	sh := m[key]
	if sh == nil {
		sh = new(T)
		m[key] = sh
	}
	return sh
}

type batchKey struct{}

// withBatch marks ctx as running the erasures of b.
func withBatch(ctx context.Context, b *batchShare) context.Context {
	return context.WithValue(ctx, batchKey{}, b)
}

func batchOf(ctx context.Context) *batchShare {
	b, _ := ctx.Value(batchKey{}).(*batchShare)
	return b
}

// pending reports whether r will still run step on st: the store is in its
// plan, has not failed, and the step is not in its journal.
func (r *runner) pending(step, st string) bool {
	if _, ok := r.keys[st]; !ok {
		return false
	}
	if _, bad := r.failed[st]; bad {
		return false
	}
	return r.j.final(step+":"+st) == nil
}

// readStoreEvidence reads the evidence of r's keys in st: alone, or, in a
// batch, from one read of the keys of every erasure still to read it.
func (r *runner) readStoreEvidence(ctx context.Context, st string, er store.EvidenceReader) (map[string]*store.Evidence, error) {
	b := batchOf(ctx)
	if b == nil {
		return er.ReadEvidence(ctx, r.keys[st])
	}
	sh := entry(b, b.ev, st)
	sh.once.Do(func() {
		seen := map[string]bool{}
		var keys []string
		for _, o := range b.runners {
			if _, ok := b.pendingAt(o, "evidence", st); o != r && !ok {
				continue
			}
			for _, k := range o.keys[st] {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
		sh.ev, sh.err = er.ReadEvidence(ctx, keys)
	})
	if sh.err != nil {
		return nil, sh.err
	}
	out := map[string]*store.Evidence{}
	for _, k := range r.keys[st] {
		if e, ok := sh.ev[k]; ok {
			out[k] = e
		}
		// A key absent from the batch's read does not exist in the
		// store: alone, ReadEvidence leaves it out too.
	}
	return out, nil
}

// deleteKeys deletes r's keys in st: alone, or, in a batch, with one Delete
// of the keys of every erasure whose delete on st is still to run and whose
// evidence step on st has ended (a FAISS index over HNSW is rebuilt once for
// the window, not once per erasure). RunBatch ends every erasure's evidence
// step before any delete, so a shared delete never takes a record whose
// evidence is still to be read. An erasure's delete step is journaled done
// only once the shared Delete has returned; a crash before that makes it
// run again, and Delete of keys already gone returns nil. When the shared
// Delete fails (other than by ctx's end), each erasure deletes its own
// keys, so each gets its own outcome.
func (r *runner) deleteKeys(ctx context.Context, st string) error {
	s := r.Stores[st]
	b := batchOf(ctx)
	if b == nil || b.dels == nil {
		return s.Delete(ctx, r.keys[st])
	}
	sh := entry(b, b.dels, st)
	sh.once.Do(func() {
		sh.keys = map[string]bool{}
		var keys []string
		for _, o := range b.runners {
			if o != r && (!o.pending("delete", st) || o.j.final("evidence:"+st) == nil) {
				continue
			}
			for _, k := range o.keys[st] {
				if !sh.keys[k] {
					sh.keys[k] = true
					keys = append(keys, k)
				}
			}
		}
		sh.err = s.Delete(ctx, keys)
	})
	if sh.err != nil {
		if ctx.Err() != nil {
			return sh.err
		}
		return s.Delete(ctx, r.keys[st])
	}
	for _, k := range r.keys[st] {
		if !sh.keys[k] {
			return s.Delete(ctx, r.keys[st]) // not in the batch's delete
		}
	}
	return nil
}

// scanPhysical byte-scans st for the needles of ev (r's evidence) at step
// "evidence" (before deletion) or "probe" (after reclaim): alone, or, in a
// batch, once for the evidence of every erasure still to run that step. The
// report keeps only r's keys.
func (r *runner) scanPhysical(ctx context.Context, st string, pp store.PhysicalProber, ev map[string]*store.Evidence, step string) (store.ScanReport, error) {
	b := batchOf(ctx)
	if b == nil {
		return pp.ProbePhysical(ctx, r.needleSet(st, ev))
	}
	sh := entry(b, b.scans, step+":"+st)
	sh.once.Do(func() {
		union := map[string]*store.Evidence{}
		for k, e := range ev {
			union[k] = e
		}
		for _, o := range b.runners {
			pev, ok := b.pendingAt(o, step, st)
			if o == r || !ok {
				continue
			}
			var oev map[string]*store.Evidence
			if step == "evidence" {
				// Not read by o yet: its part of the batch's read.
				b.mu.Lock()
				sev := b.ev[st]
				b.mu.Unlock()
				if sev == nil || sev.err != nil {
					continue
				}
				oev = map[string]*store.Evidence{}
				for _, k := range o.keys[st] {
					if e, ok := sev.ev[k]; ok {
						oev[k] = e
					}
				}
			} else if oev = pev; oev == nil {
				continue // its evidence could not be loaded: o's own probe step fails on it
			}
			for k, e := range oev {
				union[k] = e
			}
		}
		sh.keys = map[string]bool{}
		for k := range union {
			sh.keys[k] = true
		}
		sh.rep, sh.err = pp.ProbePhysical(ctx, b.needleSet(st, union))
	})
	for k := range ev {
		if !sh.keys[k] {
			// Not in the batch's scan (cannot happen for an erasure of
			// the batch whose step was pending): scan alone.
			return pp.ProbePhysical(ctx, store.NewNeedleSet(ev))
		}
	}
	if sh.err != nil {
		return store.ScanReport{}, sh.err
	}
	rep := sh.rep
	rep.Found, rep.NeedlesFound = map[string]int{}, 0
	for k := range ev {
		if n := sh.rep.Found[k]; n > 0 {
			rep.Found[k] = n
			rep.NeedlesFound += n
		}
	}
	return rep, nil
}

// cachedSet is the NeedleSet built from one evidence map.
type cachedSet struct {
	ev  map[string]*store.Evidence
	set *store.NeedleSet
}

// needleSet returns the NeedleSet of st's evidence ev, built once per run:
// the evidence step's byte scan before deletion and the probe's after it
// scan for the same needles (the same evidence map, which nothing changes
// in between), so the probe reuses the set instead of building it again.
// Evidence unsealed after a resume is another map: its set is built anew.
func (r *runner) needleSet(st string, ev map[string]*store.Evidence) *store.NeedleSet {
	if c, ok := r.sets[st]; ok && reflect.ValueOf(c.ev).UnsafePointer() == reflect.ValueOf(ev).UnsafePointer() {
		return c.set
	}
	set := store.NewNeedleSet(ev)
	if r.sets == nil {
		r.sets = map[string]cachedSet{}
	}
	r.sets[st] = cachedSet{ev: ev, set: set}
	return set
}
