package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/saga"
)

func newAnchorCommand(g *globalOptions) *cobra.Command {
	var tsa string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "anchor --tsa <url>",
		Short: "Timestamp the log's current checkpoint at an RFC 3161 authority and record the token in the log",
		Long: `Anchor signs a checkpoint of the log as it is now (if it grew), asks the
time-stamping authority at --tsa for an RFC 3161 token over the checkpoint's
signed text, stores the token with the checkpoint and appends its digest to
the log as an anchor leaf. A certificate proved against that checkpoint
('amnesia audit prove') then carries the token, and 'amnesia verify
--tsa-root' checks it.

To timestamp every certificate as it is published, set tsa_url in
amnesia.yaml instead; a TSA that is down never blocks an erasure.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tsa == "" {
				return withCode(exitUsage, fmt.Errorf("--tsa is required: the URL of an RFC 3161 time-stamping authority"))
			}
			a, lg, err := openLog(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			cp, err := lg.Checkpoint(cmd.Context())
			if err != nil {
				return err
			}
			tok, err := saga.Anchor(cmd.Context(), lg, cp, tsa, timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "anchored the checkpoint of %d leaves of %s: %s by %s (serial %s)\n",
				cp.Size, cp.Origin, tok.GenTime.UTC().Format(time.RFC3339), tok.TSASubject(), tok.SerialNumber)
			return nil
		},
	}
	cmd.Flags().StringVar(&tsa, "tsa", "", "URL of the RFC 3161 time-stamping authority")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "time limit for the TSA's answer")
	return cmd
}
