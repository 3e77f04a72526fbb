package pg

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A partitioned table keeps its rows in its leaf partitions, each an
// ordinary table with its own heap, TOAST table and indexes. The DELETE
// through the parent reports (RETURNING tableoid) which partitions held the
// deleted rows; reclaim rewrites only those, and the physical probe scans
// the files of every partition. When where the rows were is not known
// (nothing was deleted through this Target since the last reclaim, as after
// a restart; or a key matched no row, so an earlier delete may have left
// its dead tuples anywhere), every partition is rewritten.

// leavesSQL selects the oids of the leaf partitions of the table $1, or
// the table itself when it is not partitioned.
const leavesSQL = `(SELECT relid FROM pg_partition_tree($1::text::regclass) WHERE isleaf
	UNION ALL SELECT $1::text::regclass WHERE NOT EXISTS (SELECT 1 FROM pg_partition_tree($1::text::regclass)))`

// Leaf is one leaf partition.
type Leaf struct {
	OID   uint32
	Table Table
	Kind  string // relkind: "r" for an ordinary table
}

// Leaves lists t's leaf partitions by oid (t itself when it is not
// partitioned).
func Leaves(ctx context.Context, c *pgx.Conn, t Table) ([]Leaf, error) {
	rows, err := c.Query(ctx, `SELECT cl.oid::int8, n.nspname::text, cl.relname::text, cl.relkind::text
		FROM `+leavesSQL+` l(oid) JOIN pg_class cl ON cl.oid = l.oid JOIN pg_namespace n ON n.oid = cl.relnamespace ORDER BY 1`, t.Ident())
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Leaf, error) {
		var l Leaf
		var oid int64
		err := r.Scan(&oid, &l.Table.Schema, &l.Table.Name, &l.Kind)
		l.OID = uint32(oid)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	return out, nil
}

// noteParts records where a partitioned DELETE found its rows: the
// partitions' oids, and whether every key matched a row.
func (t *Target) noteParts(parts map[uint32]bool, everyKey bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partsGen++
	if !everyKey {
		t.partsUnknown = true
	}
	if t.parts == nil {
		t.parts = map[uint32]bool{}
	}
	for p := range parts {
		t.parts[p] = true
	}
}

// forgetParts drops what noteParts recorded, once a reclaim rewrote it:
// only when no delete was recorded since the reclaim chose its partitions
// (gen), or rows deleted meanwhile would lose where they were.
func (t *Target) forgetParts(gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.partsGen == gen {
		t.parts, t.partsUnknown = nil, false
	}
}

// selection returns the tables reclaim rewrites, and for a partitioned
// table a note for the method saying which partitions those are and why.
func (r *run) selection(ctx context.Context) ([]Table, string, error) {
	t := r.t
	if !t.Partitioned {
		return []Table{t.Table}, "", nil
	}
	leaves, err := Leaves(ctx, r.c, t.Table)
	if err != nil {
		return nil, "", fmt.Errorf("reclaim: %w", err)
	}
	t.mu.Lock()
	held, unknown := map[uint32]bool{}, t.partsUnknown
	for p := range t.parts {
		held[p] = true
	}
	r.partsGen = t.partsGen
	t.mu.Unlock()
	why := ""
	switch {
	case unknown:
		why = "a key matched no row, so where an earlier delete left its dead tuples is not known"
	case len(held) == 0:
		why = "no delete through this process recorded which partitions held the rows"
	default:
		in := map[uint32]bool{}
		for _, l := range leaves {
			in[l.OID] = true
		}
		for p := range held {
			if !in[p] {
				why = "a partition that held deleted rows is no longer a leaf of the table (detached or dropped)"
			}
		}
	}
	var sel, rest []Table
	for _, l := range leaves {
		if why != "" || held[l.OID] {
			sel = append(sel, l.Table)
		} else {
			rest = append(rest, l.Table)
		}
	}
	if why != "" {
		return sel, fmt.Sprintf("partitioned: every partition (%d) rewritten, because %s", len(sel), why), nil
	}
	note := fmt.Sprintf("partitioned: rewritten only the %d of %d partitions that held the deleted rows (tableoid at the DELETE): %s", len(sel), len(leaves), tableNames(sel))
	if len(rest) > 0 {
		note += "; not rewritten: " + tableNames(rest) + " (their files are scanned by the probe all the same; an earlier version of a row that an UPDATE moved out of its partition before the request is not covered by needles read from its current content)"
	}
	return sel, note, nil
}

func tableNames(ts []Table) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
