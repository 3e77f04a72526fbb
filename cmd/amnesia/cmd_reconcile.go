package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

type reconcileOptions struct {
	field, scope string
	stores       []string
	yes          bool
}

func newReconcileCommand(g *globalOptions) *cobra.Command {
	o := &reconcileOptions{}
	cmd := &cobra.Command{
		Use:   "reconcile <subject|-> --field <name> [--store s]… [--yes]",
		Short: "Find a person's records that lineage never saw, through a field, and adopt them so that an erasure covers them",
		Long: `Reconcile asks each configured store (or those given with --store) for the
records whose field --field holds the subject's identifier (the raw id given,
or its keyed digest as capture writes it): a column, or a member of a JSON
metadata column, as 'amnesia scan --field' counts them. Records that already
carry lineage are left out. It prints, per store, how many records it found
and their keys, asks for confirmation (type "yes"; --yes for scripts), and
then adopts them into the ledger in one transaction: from then on a trace of
the subject includes them, and the certificate of their erasure marks each
with "via": "reconcile".

It writes nothing to the stores. The subject is read from the argument or,
with "-", from standard input; it is never printed or logged.

Exit codes: 0 adopted (or nothing to adopt); 1 a store could not be read
(nothing is adopted); 2 usage; 6 aborted at the confirmation.`,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.field == "" {
				return withCode(exitUsage, errors.New("--field is required: the column or metadata member that holds the person's identifier (see amnesia scan --field)"))
			}
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			ad, ok := a.ledger.(lineage.Adopter)
			if !ok {
				return errors.New("this ledger cannot adopt records")
			}
			in := bufio.NewReader(cmd.InOrStdin())
			out := cmd.OutOrStdout()
			raw, err := readSubject(args[0], in)
			if err != nil {
				return err
			}
			scope := o.scope
			if scope == "" {
				scope = a.dir.Config.Scope
			}
			if err := subject.CheckNotSubject("--scope", scope, raw); err != nil {
				return err
			}
			k, err := a.dir.Keyer.Key(scope, raw)
			if err != nil {
				return withCode(exitUsage, err)
			}
			scs := a.dir.Config.Stores
			if len(o.stores) > 0 {
				scs = nil
				for _, name := range o.stores {
					sc, err := a.dir.Config.Store(name)
					if err != nil {
						return withCode(exitUsage, fmt.Errorf("%q: %w (stores: %s)", name, err, storeNames(a.dir.Config)))
					}
					scs = append(scs, sc)
				}
			}
			matches := map[string]bool{raw: true, k.String(): true}
			var adopt []lineage.Artifact
			perStore := map[string][]string{}
			for _, sc := range scs {
				c := a.dir.Config.Resolve(sc)
				err := store.List(cmd.Context(), c, func(l store.Listed) error {
					if !matches[l.Fields[o.field]] || l.Key == "" {
						return nil
					}
					if _, err := a.ledger.Lookup(cmd.Context(), scope, c.Name, l.Key); err == nil {
						return nil // lineage has it (this subject's or another's)
					} else if !errors.Is(err, lineage.ErrNotFound) {
						return err
					}
					adopt = append(adopt, lineage.Artifact{
						ID: lineage.ArtifactID(a.dir.Keyer, scope, c.Name, l.Key), Scope: scope, Subject: k,
						Kind: adoptedKind(c.Type), Store: c.Name, Key: l.Key, Digest: lineage.ContentDigest(a.dir.Keyer, l.Content),
					})
					perStore[c.Name] = append(perStore[c.Name], l.Key)
					return nil
				})
				if errors.Is(err, store.ErrNotListable) {
					fmt.Fprintf(out, "%s (%s): not asked: %v\n", c.Name, c.Type, err)
					continue
				}
				if err != nil {
					return fmt.Errorf("store %s: %w: nothing was adopted", c.Name, err)
				}
			}
			printReconcile(out, k, o.field, perStore)
			if len(adopt) == 0 {
				return nil
			}
			if !o.yes && !confirmAdopt(out, in, len(adopt), k) {
				return withCode(exitAborted, errors.New("aborted: nothing was adopted"))
			}
			if err := ad.Adopt(cmd.Context(), adopt, lineage.ViaReconcile); err != nil {
				return fmt.Errorf("adopt: %w", err)
			}
			fmt.Fprintf(out, "adopted %d records into the lineage of %s: amnesia trace and forget now include them\n", len(adopt), k.Ref())
			return nil
		},
	}
	cmd.Flags().StringVar(&o.field, "field", "", "the column or JSON metadata member that holds the person's identifier (required)")
	cmd.Flags().StringVar(&o.scope, "scope", "", "scope (tenant); default: the configured scope")
	cmd.Flags().StringArrayVar(&o.stores, "store", nil, "ask only this store (repeatable); default: every configured store")
	cmd.Flags().BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	return cmd
}

// adoptedKind is the lineage kind of an adopted record, by its store's type.
func adoptedKind(typ string) lineage.Kind {
	switch typ {
	case "sqlite-vec", "pgvector", "faiss", "chromem", "pinecone", "weaviate", "chroma":
		return lineage.KindEmbedding
	case "redis":
		return lineage.KindCache
	}
	return lineage.KindSource
}

func printReconcile(out io.Writer, k subject.Key, field string, perStore map[string][]string) {
	if len(perStore) == 0 {
		fmt.Fprintf(out, "no record outside the lineage of %s holds it in %q\n", k.Ref(), field)
		return
	}
	names := make([]string, 0, len(perStore))
	for n := range perStore {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "records outside the lineage of %s whose %q holds it:\n", k.Ref(), field)
	for _, n := range names {
		keys := perStore[n]
		sort.Strings(keys)
		fmt.Fprintf(out, "  %s: %d (%s)\n", n, len(keys), strings.Join(keys, ", "))
	}
}

func confirmAdopt(out io.Writer, in *bufio.Reader, n int, k subject.Key) bool {
	fmt.Fprintf(out, "Adopt %d records into the lineage of %s? Type \"yes\" to go on: ", n, k.Ref())
	line, err := in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	fmt.Fprintln(out)
	return strings.TrimSpace(line) == "yes"
}
