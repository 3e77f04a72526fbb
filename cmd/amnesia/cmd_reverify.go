package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/comeback"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
)

func newReverifyCommand(g *globalOptions) *cobra.Command {
	var due bool
	var every string
	cmd := &cobra.Command{
		Use:   "reverify <certificate> | --due [--every 7d]",
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

With --due it re-verifies, one after the other, every re-verifiable erasure
certificate in the state directory whose last check (its own issue, or its
latest re-verification or replay) is reverify.every (amnesia.yaml, e.g. 7d) or
--every ago; 'amnesia serve' runs the same on that schedule. When erased
records came back it writes an alert to the log (WARN "erased data
reappeared"), prints ALERT lines and exits 7; each RESIDUAL certificate links
to the erasure certificate it re-verified.

` + exitCodesHelp,
		Args: func(c *cobra.Command, args []string) error {
			if due {
				return usageArgs(0)(c, args)
			}
			return usageArgs(1)(c, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if due {
				a, err := openApp(cmd.Context(), g)
				if err != nil {
					return err
				}
				defer a.Close()
				d := a.dir.Config.ReverifyEvery()
				if every != "" {
					var ok bool
					if d, ok = state.ParseInterval(every); !ok {
						return withCode(exitUsage, fmt.Errorf("--every %q: want a duration such as 7d or 168h", every))
					}
				}
				return a.reverifyDue(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), d)
			}
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
	cmd.Flags().BoolVar(&due, "due", false, "re-verify every erasure certificate whose next check is due (reverify.every)")
	cmd.Flags().StringVar(&every, "every", "", "with --due: the interval, instead of reverify.every (7d, 168h)")
	return cmd
}

// reverifyDue re-verifies the due erasures and prints one line each.
func (a *app) reverifyDue(ctx context.Context, out, progress io.Writer, every time.Duration) error {
	rep, err := comeback.Due(ctx, &comeback.Env{Dir: a.dir, Ledger: a.ledger, Log: a.log, Progress: progress}, every)
	if err != nil {
		if every <= 0 {
			return withCode(exitUsage, err)
		}
		return err
	}
	fmt.Fprintf(out, "%d erasure certificates due (every %s), %d not yet due, %d not re-verifiable\n", len(rep.Outcomes), every, rep.NotDue, rep.Skipped)
	return printComeback(out, rep, "re-verification")
}

// printComeback prints a line per outcome, an ALERT per erasure whose data
// came back, and returns the error of the run: exit 7 when a certificate is
// incomplete, exit 1 when one could not be re-verified.
func printComeback(out io.Writer, rep *comeback.Report, what string) error {
	var errs []error
	for _, o := range rep.Outcomes {
		if o.Err != nil {
			fmt.Fprintf(out, "  %s: FAILED: %v\n", o.Erasure.CertificateID, o.Err)
			errs = append(errs, fmt.Errorf("%s: %w", o.Erasure.CertificateID, o.Err))
			continue
		}
		p := o.Result.Statement.Predicate
		c := p.Counts
		fmt.Fprintf(out, "  %s (%s): %s %s: %d VERIFIED(logical), %d RESIDUAL, %d UNVERIFIED, %d OUT_OF_SCOPE; certificate: %s\n",
			o.Erasure.CertificateID, o.Erasure.SubjectRef, what, o.Result.ID, c.VerifiedLogical, c.Residual, c.Unverified, c.OutOfScope, o.Result.CertificatePath)
	}
	for _, o := range rep.Reappeared() {
		fmt.Fprintf(out, "ALERT: erased data reappeared: %d records of erasure %s (%s) were found again by id; RESIDUAL certificate %s\n",
			o.Result.Statement.Predicate.Counts.Residual, o.Erasure.CertificateID, o.Erasure.SubjectRef, o.Result.CertificatePath)
	}
	// Exit 7 (data came back, or a certificate is incomplete) wins over
	// exit 1 (a certificate could not be re-verified): both are reported.
	if n := rep.Incomplete() - len(errs); n > 0 {
		return withCode(exitIncomplete, errors.Join(append([]error{fmt.Errorf("%d of %d %ss are incomplete: see their RESIDUAL, UNVERIFIED and OUT_OF_SCOPE entries", n, len(rep.Outcomes), what)}, errs...)...))
	}
	return errors.Join(errs...)
}

// reverify checks the certificate before any store is opened, then probes
// and certifies.
func (a *app) reverify(ctx context.Context, out, progress io.Writer, data []byte) error {
	orig, err := saga.CheckReverify(ctx, a.dir, a.env().Durable(), data, nil)
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
