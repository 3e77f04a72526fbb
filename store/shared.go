package store

import (
	"bytes"
	"context"
)

// DropShared removes from ev every needle that also occurs in a record
// outside ev, and counts it in Evidence.Shared: bytes that another live
// record holds prove nothing about the erased one. others calls fn once per
// other live record's bytes (in the encoding the store keeps them), and stops
// when fn returns an error.
func DropShared(ctx context.Context, ev map[string]*Evidence, others func(fn func(b []byte) error) error) error {
	set := NewNeedleSet(ev)
	if set.Len() == 0 {
		return nil
	}
	sc := NewScanner(set, "shared")
	err := others(func(b []byte) error {
		sc.ScanBytes(b)
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	for i, hit := range sc.hit {
		if !hit {
			continue
		}
		e := ev[set.owner[i]]
		for j, n := range e.Needles {
			if bytes.Equal(n, set.needles[i]) {
				e.Needles = append(e.Needles[:j], e.Needles[j+1:]...)
				e.Shared++
				break
			}
		}
	}
	return nil
}
