package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/saga"
)

func newReverifyCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "reverify <certificate>",
		Short: "Probe the stores of a certificate again and issue a new certificate linked to it",
		Long: `Reverify checks a certificate this installation issued (signature, schema,
transparency-log proof, with the installation's own keys: the keyring, with
retirement times), refuses one
that says reverifiable: false, then looks every erased record up again by id in
its store, with the store keys the ledger already holds, and asks each store
what it can measure without needles (PostgreSQL dead tuples, when SQLite files
were last written). It changes no store. It issues a new certificate, linked to
the first by its id, payload digest and log index (predicate.reverifies), and
logs it in the transparency log like any certificate.

A re-verification never claims the physical level: amnesia keeps no needles
once a certificate is published, so the byte scan cannot be repeated.
Records still absent are VERIFIED(logical), method "reverify: by id"; a record
that came back (re-ingested, restored from a backup) is RESIDUAL and the
command exits 7. See docs/reverify.md.

` + exitCodesHelp,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("read certificate: %w", err)
			}
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			return a.reverify(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), data)
		},
	}
}

// reverify checks the certificate before any store is opened, then probes
// and certifies.
func (a *app) reverify(ctx context.Context, out, progress io.Writer, data []byte) error {
	orig, err := saga.CheckReverify(ctx, a.dir, data, nil)
	if errors.Is(err, saga.ErrNotReverifiable) {
		return withCode(exitNotReverifiable, fmt.Errorf("refused: %w", err))
	}
	if err != nil {
		return err
	}
	stores, failed := a.dir.Config.OpenStores(ctx)
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	res, err := saga.Reverify(ctx, &saga.Reverification{
		Dir: a.dir, Ledger: a.ledger, Stores: stores, OpenErr: failed,
		Original: orig, Log: a.log, Progress: progress,
	})
	if err != nil {
		return err
	}
	l := res.Statement.Predicate.Reverifies
	fmt.Fprintf(out, "re-verification %s of certificate %s (payload sha256 %s, log index %d)\n", res.ID, l.CertificateID, l.PayloadSHA256, l.LogIndex)
	printOutcome(out, res, true)
	if !res.Statement.Predicate.Complete {
		return withCode(exitIncomplete, fmt.Errorf("re-verification %s is incomplete: see the certificate's RESIDUAL, UNVERIFIED and OUT_OF_SCOPE entries", res.ID))
	}
	return nil
}
