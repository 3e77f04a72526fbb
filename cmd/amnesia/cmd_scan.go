package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/census"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

type scanOptions struct {
	config, field, scope string
	json                 bool
}

func newScanCommand(g *globalOptions) *cobra.Command {
	o := &scanOptions{}
	cmd := &cobra.Command{
		Use:   "scan [store…] [--field <name>] [--json]",
		Short: "Count what each store holds, lineage or not, without writing to it",
		Long: `Scan is a census of the configured stores (all of them, or those named),
including data written before amnesia was installed. For each store it prints:

  records        how many records its table or collection holds
  lineage        how many of them carry lineage (an artifact in the ledger)
  attributable   with --field: how many have a value in that field (a column,
                 or a member of a JSON metadata column), so that
                 'amnesia reconcile' can attribute them to a person
  identical      how many records are byte-identical copies of another
                 record's content in the same store, in how many groups
  proof          the strongest verification level an erasure from it can reach,
                 and why

Scan writes nothing: SQLite files are opened read-only (no journal mode change,
no schema), PostgreSQL is read in a READ ONLY transaction, files are only read.
It compares a file store's files before and after and reports any file that
changed while it ran (an engine that rewrote something on open, or an
application writing at the same time). It prints counts, store, field and file
names only: never a record's content or a field's value.

Exit codes: 0 every store counted; 1 a store could not be read (the others are
still counted) or the configuration cannot be read.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg *state.Config
			var dir *state.Dir
			if o.config != "" {
				c, err := state.LoadConfig(o.config)
				if err != nil {
					return err
				}
				cfg = c
			} else {
				d, err := state.Open(g.stateDir)
				if err != nil {
					return err
				}
				dir, cfg = d, d.Config
			}
			scs := cfg.Stores
			if len(args) > 0 {
				scs = nil
				for _, name := range args {
					sc, err := cfg.Store(name)
					if err != nil {
						return withCode(exitUsage, fmt.Errorf("%q: %w (stores: %s)", name, err, storeNames(cfg)))
					}
					scs = append(scs, sc)
				}
			}
			opts := census.Options{Field: o.field, Scope: o.scope}
			if opts.Scope == "" {
				opts.Scope = cfg.Scope
			}
			if dir != nil {
				a, err := openAppDir(cmd.Context(), dir)
				switch {
				case err == nil:
					defer a.Close()
					opts.Ledger = a.ledger
				case errors.Is(err, lineage.ErrNoLineage):
					// No ledger yet: nothing carries lineage; say so.
				default:
					return err
				}
			}
			var reps []*census.Report
			failed := 0
			for _, sc := range scs {
				r := census.Run(cmd.Context(), cfg.Resolve(sc), opts)
				if r.Error != "" {
					failed++
				}
				reps = append(reps, r)
				if !o.json {
					printCensus(cmd, r, o.field, opts.Ledger != nil)
				}
			}
			if o.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"field": o.field, "stores": reps}); err != nil {
					return err
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d stores could not be counted", failed, len(scs))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "scan the stores of this configuration instead of the state directory's (no ledger: lineage is not counted)")
	cmd.Flags().StringVar(&o.field, "field", "", "the attribution field: a column, or a member of a JSON metadata column, that holds a person's identifier")
	cmd.Flags().StringVar(&o.scope, "scope", "", "scope (tenant) whose lineage is counted; default: the configured scope")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the census as JSON")
	return cmd
}

func printCensus(cmd *cobra.Command, r *census.Report, field string, ledger bool) {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%s (%s)\n", r.Name, r.Type)
	if r.Error != "" {
		fmt.Fprintf(w, "  NOT COUNTED: %s\n", r.Error)
		fmt.Fprintf(w, "  proof:        %s: %s\n", r.Level, r.Why)
		return
	}
	fmt.Fprintf(w, "  records:      %d\n", r.Records)
	if ledger {
		fmt.Fprintf(w, "  lineage:      %d with lineage, %d without\n", r.WithLineage, r.Records-r.WithLineage)
	} else {
		fmt.Fprintf(w, "  lineage:      not counted (no ledger)\n")
	}
	if field != "" {
		fmt.Fprintf(w, "  attributable: %d through %q, %d without it\n", r.Attributable, field, r.Records-r.Attributable)
	}
	fmt.Fprintf(w, "  identical:    %d records in %d groups of byte-identical content\n", r.Duplicates, r.DuplicateGroups)
	fmt.Fprintf(w, "  proof:        %s: %s\n", r.Level, r.Why)
	for _, c := range r.Changed {
		fmt.Fprintf(w, "  CHANGED while scanning: %s %s\n", c.Path, c.What)
	}
}

func storeNames(cfg *state.Config) string {
	names := make([]string, len(cfg.Stores))
	for i, s := range cfg.Stores {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}
