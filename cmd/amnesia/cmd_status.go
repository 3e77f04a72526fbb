package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/queuestatus"
)

func newStatusCommand(g *globalOptions) *cobra.Command {
	var all, asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "status [--all] [--limit 100] [--json]",
		Short: "Show the erasure queue: waiting, running, done, failed, overdue",
		Long: `Status shows the erasure queue kept in the ledger (erase --queue, serve, worker):
the count of erasures in each state, and each erasure not yet done in the order a
worker claims them (due first): its erasure id, subject (keyed reference, hmac:…),
state (waiting, retry-wait, running, lease-expired), due date and the time left
(OVERDUE when past it), how long ago it was queued, attempts, the worker of the
latest claim and its lease, the host that must run it, and the error that ended its
last attempt (a job released for a retry). --all also lists the
finished erasures, latest first, with their certificate digest or error; a failed
erasure shows whether a job of its subject followed it (queued after it, or done
after it was queued). An erasure that went on with a later trace of its subject
shows as "er-A (as er-B)". Last, each store's
delete persistence latency in the latest finished erasure whose journal probed it.

Status only reads: one read-only transaction on the ledger and the journals; it
never claims, renews or changes an erasure. Times are the ledger's clock.

Exit status: 0 when nothing needs attention; 25 when an erasure is overdue (not
done past its due date) or failed with no job of its subject queued after it
(trace it again and queue the new trace) or done after it was queued: for cron
and monitoring. --json prints
the same as JSON (docs/status.md).`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return withCode(exitUsage, errors.New("--limit must be at least 1"))
			}
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			r, err := queuestatus.Read(cmd.Context(), a.ledger, queuestatus.Options{Limit: limit, All: all, Durable: a.env().Durable()})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				err = enc.Encode(r)
			} else {
				err = queuestatus.Write(w, r)
			}
			if err != nil {
				return fmt.Errorf("status: %w", err)
			}
			if r.Attention {
				return withCode(exitQueueAttention, errSilent)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also list the finished erasures (done and failed), latest first")
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most this many open erasures (and, with --all, finished ones)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
