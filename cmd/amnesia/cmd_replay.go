package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/comeback"
)

func newReplayCommand(g *globalOptions) *cobra.Command {
	var since string
	cmd := &cobra.Command{
		Use:   "replay --since <time>",
		Short: "Re-apply every erasure done since a backup's time to stores restored from that backup, and certify it",
		Long: `A store restored from a backup holds again every record erased after the
backup was taken. Replay takes every erasure certificate of this installation
issued at or after --since (the time the backup was taken; RFC 3339, or a date
YYYY-MM-DD in UTC), looks each erased record up by id in its store with the
store keys the ledger holds, deletes again those found (and reclaims the store
when its adapter can), looks them up again, and issues a certificate per
erasure linked to it (predicate.reverifies; ids rp-…): VERIFIED(logical) for a
record no lookup by id returns, with measurement.deleted true when the replay
deleted it. The physical level is not measured (amnesia keeps no needles after
publication). The ledger and the state directory must be the current ones, not
restored from the same backup. See docs/backup.md.

Exits 7 when a replay certificate is incomplete (a store unreachable, a record
still found). ` + "\n\n" + exitCodesHelp,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseSince(since)
			if err != nil {
				return withCode(exitUsage, err)
			}
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			out := cmd.OutOrStdout()
			rep, err := comeback.Replay(cmd.Context(), &comeback.Env{Dir: a.dir, Ledger: a.ledger, Log: a.log, Progress: cmd.ErrOrStderr()}, t)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%d erasure certificates issued since %s replayed, %d older, %d not replayable (reverifiable: false)\n", len(rep.Outcomes), t.UTC().Format(time.RFC3339), rep.NotDue, rep.Skipped)
			for _, o := range rep.Outcomes {
				if o.Result != nil {
					n := 0
					for _, art := range o.Result.Statement.Predicate.Artifacts {
						if art.Measurement != nil && art.Measurement.Deleted {
							n++
						}
					}
					fmt.Fprintf(out, "  %s: %d records had come back with the restore and were deleted again\n", o.Erasure.CertificateID, n)
				}
			}
			return printComeback(out, rep, "replay")
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "the backup's time: RFC 3339 (2026-03-01T02:00:00Z) or a UTC date (2026-03-01); take it a little before the backup started")
	return cmd
}

func parseSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("--since is required: the time the restored backup was taken (RFC 3339, or YYYY-MM-DD in UTC)")
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want RFC 3339 (2026-03-01T02:00:00Z) or a date (2026-03-01)", s)
}
