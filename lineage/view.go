package lineage

import (
	"fmt"
	"sort"
)

// The helpers below let a backend read a View one breadth-first level at a
// time (a few set-based statements a level, not a few per artifact) and
// still build exactly the View that a read of one artifact at a time builds.

// NewFrontier returns ids without repeats and without those v already holds,
// in their first order: the first level of a view's walk.
func NewFrontier(v *View, ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if _, ok := v.Artifacts[id]; ok || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}

// SplitKnown starts a level of a view's walk: it moves the artifacts of
// frontier that known already holds (read with the subject's own, say)
// into a new level map, deleting them from known, and returns the ids
// still to be read, in frontier's order.
func SplitKnown(frontier []string, known map[string]*Artifact) (level map[string]*Artifact, missing []string) {
	level = make(map[string]*Artifact, len(frontier))
	for _, id := range frontier {
		if a := known[id]; a != nil {
			level[id] = a
			delete(known, id)
		} else {
			missing = append(missing, id)
		}
	}
	return level, missing
}

// AddLevel adds the artifacts of one level to v: level holds them by id
// (their Parents as read, in any order), children the child ids of each
// (in any order). It sorts both (byte order, as the backends' ORDER BY
// did), and returns the next level: the children not yet in v. An id of
// frontier that level lacks is an error: the ledger refers to an artifact
// it does not hold.
func AddLevel(v *View, frontier []string, level map[string]*Artifact, children map[string][]string) ([]string, error) {
	var next []string
	for _, id := range frontier {
		a := level[id]
		if a == nil {
			return nil, fmt.Errorf("artifact %s is referred to but not recorded", id)
		}
		sort.Strings(a.Parents)
		ch := children[id]
		sort.Strings(ch)
		v.Artifacts[id] = a
		v.Children[id] = ch
		next = append(next, ch...)
	}
	return NewFrontier(v, next), nil
}
