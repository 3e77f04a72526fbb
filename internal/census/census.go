// Package census counts what a store holds, including data written before
// amnesia was installed, without writing to it: how many records, how many
// carry lineage, how many can be attributed to a person through a field,
// how many are byte-identical copies, and the strongest proof an erasure
// from the store can reach. It is what `amnesia scan` prints.
//
// Nothing personal leaves this package: record content and field values
// are hashed or compared in memory; the report holds counts, store names,
// field names and file names only.
package census

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// Options say what a census counts.
type Options struct {
	// Field, when set, is the attribution field: a record whose Fields has
	// a non-empty value for it is attributable to a person.
	Field string
	// Ledger and Scope, when Ledger is set, count the records that carry
	// lineage (an artifact recorded at the record's store and key).
	Ledger lineage.Ledger
	Scope  string
}

// Report is the census of one store.
type Report struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Records counts the store's records (its configured table or
	// collection).
	Records int `json:"records"`
	// WithLineage counts records with an artifact in the ledger; -1 when
	// no ledger was given.
	WithLineage int `json:"with_lineage"`
	// Attributable counts records with a non-empty Options.Field; -1 when
	// no field was given. FieldMissing counts records without it.
	Attributable int `json:"attributable"`
	// Duplicates counts records whose content is byte-identical to another
	// record's in the store, in DuplicateGroups groups.
	Duplicates      int `json:"duplicates"`
	DuplicateGroups int `json:"duplicate_groups"`
	// Level is the strongest verification level an erasure from the store
	// can reach (physical, logical or unknown), Why says why.
	Level string `json:"level"`
	Why   string `json:"why"`
	// Changed lists the store's files that changed while the census ran
	// (an engine that rewrote something on open, or an application
	// writing at the same time): path and what changed.
	Changed []Change `json:"changed,omitempty"`
	// Error is why the store could not be counted; the counts are then 0.
	Error string `json:"error,omitempty"`
}

// Change is one file that differed after the census.
type Change struct {
	Path string `json:"path"`
	What string `json:"what"` // created, removed, modified
}

// Run counts the store c. An error reaching or reading the store is in
// Report.Error, not returned: a census of several stores goes on.
func Run(ctx context.Context, c store.Config, o Options) *Report {
	r := &Report{Name: c.Name, Type: c.Type, WithLineage: -1, Attributable: -1}
	r.Level, r.Why = store.Proof(c)
	before, snapErr := snapshot(c)
	digests := map[[32]byte]int{}
	var keys []string
	if o.Field != "" {
		r.Attributable = 0
	}
	err := store.List(ctx, c, func(l store.Listed) error {
		r.Records++
		if o.Field != "" && l.Fields[o.Field] != "" {
			r.Attributable++
		}
		if len(l.Content) > 0 {
			digests[sha256.Sum256(l.Content)]++
		}
		if o.Ledger != nil {
			keys = append(keys, l.Key)
		}
		return nil
	})
	if err != nil {
		r.Error = errorLine(err)
		r.Records, r.Attributable = 0, -1
		return r
	}
	for _, n := range digests {
		if n > 1 {
			r.Duplicates += n
			r.DuplicateGroups++
		}
	}
	if o.Ledger != nil {
		r.WithLineage = 0
		for _, k := range keys {
			a, err := o.Ledger.Lookup(ctx, o.Scope, c.Name, k)
			switch {
			case err == nil && a != nil:
				r.WithLineage++
			case err != nil && !errors.Is(err, lineage.ErrNotFound):
				r.Error = "ledger: " + errorLine(err)
				r.WithLineage = -1
				return r
			}
		}
	}
	if snapErr == nil {
		if after, err := snapshot(c); err == nil {
			r.Changed = diff(before, after)
		}
	}
	return r
}

// errorLine is err's text on one line. Adapter errors name stores, files
// and columns, never record content.
func errorLine(err error) string {
	s := err.Error()
	for i, ch := range s {
		if ch == '\n' {
			return s[:i]
		}
	}
	return s
}

// fileState is what a census compares of one file.
type fileState struct {
	size int64
	sum  [32]byte
}

// snapshot reads the files a file-based store keeps (its path, a file or a
// directory, and SQLite's companions); server stores have none here.
func snapshot(c store.Config) (map[string]fileState, error) {
	out := map[string]fileState{}
	if c.Path == "" {
		return out, nil
	}
	for _, p := range []string{c.Path, c.Path + "-wal", c.Path + "-shm", c.Path + "-journal"} {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			st, err := fileSum(path)
			if err != nil {
				return err
			}
			out[path] = st
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func fileSum(path string) (fileState, error) {
	// store.OpenRead, not os.Open: a store of this census may be a SQLite
	// database this process has open, and closing a descriptor of it would
	// drop that connection's locks.
	f, size, done, err := store.OpenRead(path)
	if err != nil {
		return fileState{}, err
	}
	defer done()
	h := sha256.New()
	if f != nil {
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
			return fileState{}, err
		}
	}
	st := fileState{size: size}
	copy(st.sum[:], h.Sum(nil))
	return st, nil
}

func diff(before, after map[string]fileState) []Change {
	var out []Change
	for p, a := range after {
		b, ok := before[p]
		switch {
		case !ok:
			out = append(out, Change{p, "created"})
		case a.sum != b.sum || a.size != b.size:
			out = append(out, Change{p, fmt.Sprintf("modified (%d → %d bytes)", b.size, a.size)})
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, Change{p, "removed"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
