package store

import (
	"context"
	"sort"
)

// MaxSharedWith is the most other records Evidence.SharedWith names per
// record.
const MaxSharedWith = 8

// DropShared removes from ev every needle that also occurs in a record
// outside ev, counts it in Evidence.Shared, and names in
// Evidence.SharedWith the records that hold it: bytes that another live
// record holds prove nothing about the erased one, but that record may be a
// copy of it, which the caller must report. others calls fn once per other
// live record, with its key and its bytes (in the encoding the store keeps
// them; a record with several fields may be passed once per field), and
// stops when fn returns an error. Bytes passed with an empty key are
// counted as shared but name no holder: adapters pass vector encodings so,
// because an identical vector is what any identical chunk text (a template
// line, a boilerplate footer) yields, and the vector alone cannot tell a
// copy from those; the copy of the text is named where the text is kept.
// A needle that the end of one record followed by the start of another (or
// zero fill, on either side) can form is counted as shared too, with no
// holder named: stores keep records back to back (see span.go).
func DropShared(ctx context.Context, ev map[string]*Evidence, others func(fn func(key string, b []byte) error) error) error {
	set := NewNeedleSet(ev)
	if set.Len() == 0 {
		return nil
	}
	sc := NewScanner(set, "shared")
	sc.track = true
	shared := make([]bool, set.Len())
	sp := newSpans(set)
	holders := map[string]map[string]map[int]bool{} // owner -> holder -> needles it holds
	err := others(func(key string, b []byte) error {
		sc.fresh = sc.fresh[:0]
		sc.ScanBytes(b)
		sp.record(b)
		for _, i := range sc.fresh {
			sc.unhit(i) // the next record may hold it too
			shared[i] = true
			if key == "" {
				continue
			}
			o := set.owner[i]
			if holders[o] == nil {
				holders[o] = map[string]map[int]bool{}
			}
			if holders[o][key] == nil {
				holders[o][key] = map[int]bool{}
			}
			holders[o][key][i] = true
		}
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	for i := range shared {
		shared[i] = shared[i] || sp.spanning(i)
	}
	// set.needles[i] is ev[set.owner[i]].Needles[j] for the i-th needle of
	// that key in order (NewNeedleSet skips needles under 8 bytes, which
	// Tile never makes; such needles are kept).
	pos := 0
	for _, k := range set.Keys() {
		e := ev[k]
		kept := e.Needles[:0]
		for _, n := range e.Needles {
			if len(n) >= 8 {
				if shared[pos] {
					e.Shared++
					pos++
					continue
				}
				pos++
			}
			kept = append(kept, n)
		}
		e.Needles = kept
		e.SharedWith, e.SharedWithMore = topHolders(holders[k])
	}
	return nil
}

// topHolders returns the MaxSharedWith holders with the most windows (ties
// by key) and how many were left out.
func topHolders(h map[string]map[int]bool) (map[string]int, int) {
	if len(h) == 0 {
		return nil, 0
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(h[keys[i]]) != len(h[keys[j]]) {
			return len(h[keys[i]]) > len(h[keys[j]])
		}
		return keys[i] < keys[j]
	})
	out := map[string]int{}
	for _, k := range keys[:min(len(keys), MaxSharedWith)] {
		out[k] = len(h[k])
	}
	return out, len(keys) - len(out)
}
