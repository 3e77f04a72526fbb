package main

import (
	"bufio"
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

func pubKey(p crypto.PublicKey) ed25519.PublicKey { return p.(ed25519.PublicKey) }

type traceOptions struct {
	scope string
	json  bool
}

func newTraceCommand(g *globalOptions) *cobra.Command {
	o := &traceOptions{}
	cmd := &cobra.Command{
		Use:   "trace <subject | ->",
		Short: "Show every artifact recorded for a subject (pure, read-only)",
		Long: `Trace computes, from the ledger alone, the exact set of artifacts an erasure of
the subject would touch: its own artifacts and everything derived from them, and
apart, the artifacts of other people that mention it (never erased automatically).
The same ledger state gives byte-identical output. The trace is saved under
traces/<id>.json for 'amnesia erase --trace <id>'. Pass "-" to read the subject id
from standard input, keeping it out of shell history.

A subject with no lineage is an error (exit 3), never "nothing to delete".`,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			t, err := a.trace(cmd.Context(), args[0], o.scope, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if o.json {
				b, err := t.Encode()
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			printTrace(cmd.OutOrStdout(), a.dir, a.env().Durable(), t)
			if k, err := subject.ParseKey(t.Subject); err == nil {
				if note := a.consentNote(cmd.Context(), t.Scope, k); note != "" {
					fmt.Fprintln(cmd.OutOrStdout(), strings.TrimPrefix(note, "\n"))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.scope, "scope", "", "scope (tenant); default: the configured scope")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the trace as canonical JSON")
	return cmd
}

// readSubject returns the raw subject id: the argument, or one line of in for "-".
func readSubject(arg string, in io.Reader) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	if in == nil {
		return "", errors.New("read subject: standard input was already read")
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read subject from stdin: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// trace computes and saves the trace of a subject: arg is the raw id, or
// "-" to read it from in.
func (a *app) trace(ctx context.Context, arg, scope string, in io.Reader) (*lineage.Trace, error) {
	raw, err := readSubject(arg, in)
	if err != nil {
		return nil, err
	}
	if scope == "" {
		scope = a.dir.Config.Scope
	}
	if err := subject.CheckNotSubject("--scope", scope, raw); err != nil {
		return nil, err // the scope goes into the trace, certificate and log
	}
	k, err := a.dir.Keyer.Key(scope, raw)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	t, v, err := a.env().Trace(ctx, k, scope)
	if errors.Is(err, lineage.ErrAlreadyErased) {
		return nil, fmt.Errorf("%w%s%s", err, erasedBy(ctx, a.env().Durable(), v), a.consentNote(ctx, scope, k))
	}
	return t, err
}

func printTrace(w io.Writer, dir *state.Dir, dur saga.Durable, t *lineage.Trace) {
	fmt.Fprintf(w, "trace %s\n  subject %s, scope %q: %d artifacts to erase, %d third-party mentions, %d already erased\n",
		t.ID, t.SubjectRef, t.Scope, len(t.Artifacts), len(t.Mentions), t.Erased)
	for _, p := range t.Plan {
		note := ""
		if _, err := dir.Config.Store(p.Store); err != nil {
			note = "  (NOT CONFIGURED: will be reported OUT_OF_SCOPE)"
		}
		fmt.Fprintf(w, "  %-12s %4d records  %s%s\n", p.Store, len(p.Delete), strings.Join(p.Kinds, " "), note)
	}
	if len(t.Mentions) > 0 {
		fmt.Fprintf(w, "  %d artifacts of other people mention this subject: NEEDS_HUMAN, not erased\n", len(t.Mentions))
	}
	printModelReach(w, dir, t) // cmd_model.go
	if saga.InLedger(dur) {
		fmt.Fprintf(w, "  saved: in the ledger (erase --trace %s)\n", t.ID)
		return
	}
	fmt.Fprintf(w, "  saved: %s\n", dir.TracePath(t.ID))
}

// erasedBy names the erasures that erased the subject's own artifacts (and
// what derives from them), with their certificates' paths: the answer to
// "already erased: where is the proof?". The certificates are read where
// the installation keeps them (the ledger, or the state directory; a
// certificate read from the ledger is copied to this host's certificates/).
// Artifacts of other people that mention the subject are left out: their
// erasures are not this subject's.
func erasedBy(ctx context.Context, dur saga.Durable, v *lineage.View) string {
	seen := map[string]bool{}
	ids := map[string]bool{}
	queue := append([]string(nil), v.Owned...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		if v.Erased[id] == certificate.Verified && v.ErasedBy[id] != "" {
			ids[v.ErasedBy[id]] = true
		}
		queue = append(queue, v.Children[id]...)
	}
	if len(ids) == 0 {
		return ""
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	var b strings.Builder
	for i, id := range sorted {
		if i == 0 {
			b.WriteString("\nalready erased by ")
		} else {
			b.WriteString("\nand by ")
		}
		path := dur.CertificateRef(id)
		fmt.Fprintf(&b, "%s; certificate: %s", id, path)
		if _, err := dur.Certificate(ctx, id); err != nil {
			fmt.Fprintf(&b, " (not in %s: that erasure is unfinished, or ran with another state directory; run the same forget again to finish an unfinished one)", dur.Where())
		}
	}
	return b.String()
}
