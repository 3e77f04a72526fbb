package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/service"
)

func newRequestsCommand(g *globalOptions) *cobra.Command {
	var stateF, overdue string
	var asJSON bool
	openSvc := func(cmd *cobra.Command) (*service.Service, error) {
		return service.Open(cmd.Context(), g.stateDir, service.Options{NoWorker: true})
	}
	cmd := &cobra.Command{
		Use:   "requests [list] [--status S] [--overdue true|false] [--json]",
		Short: "List the erasure requests of 'amnesia serve' (received, queued, running, done, failed, overdue)",
		Long: `Requests lists the erasure requests kept in the ledger: when each was received,
its due date, its external reference, its state and, once done, its certificate.
An overdue request is past its due date and not done. 'requests show <id>' prints
one request. Raw subject ids are never stored: requests show the subject's keyed
reference (hmac:…).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] != "list" {
				return withCode(exitUsage, fmt.Errorf("unknown requests command %q: use list or show <id>", args[0]))
			}
			f := service.RequestFilter{State: stateF}
			if overdue != "" {
				v, err := strconv.ParseBool(overdue)
				if err != nil {
					return withCode(exitUsage, fmt.Errorf("--overdue: want true or false"))
				}
				f.Overdue = &v
			}
			svc, err := openSvc(cmd)
			if err != nil {
				return err
			}
			defer svc.Close()
			rs, err := svc.AllRequests(cmd.Context(), f)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(rs)
			}
			if len(rs) == 0 {
				fmt.Fprintln(w, "no erasure requests")
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tSCOPE\tSUBJECT\tRECEIVED\tDUE\tEXTERNAL REF\tCERTIFICATE")
			for _, r := range rs {
				st := r.State
				if r.Overdue {
					st += " (OVERDUE)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, st, r.Scope, r.SubjectRef, r.ReceivedAt.Format(time.RFC3339), r.DueAt.Format(time.RFC3339), orDash(r.ExternalRef), orDash(r.CertificateID))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&stateF, "status", "", "only requests in this state (received, previewed, queued, running, done, failed, paused)")
	cmd.Flags().StringVar(&overdue, "overdue", "", "only overdue (true) or not overdue (false) requests")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	show := &cobra.Command{
		Use:   "show <id>",
		Short: "Print one erasure request (JSON)",
		Args:  usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := openSvc(cmd)
			if err != nil {
				return err
			}
			defer svc.Close()
			rs, err := svc.AllRequests(cmd.Context(), service.RequestFilter{})
			if err != nil {
				return err
			}
			for _, r := range rs {
				if r.ID == args[0] {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					return enc.Encode(r)
				}
			}
			return fmt.Errorf("no erasure request %s: see 'amnesia requests'", args[0])
		},
	}
	cmd.AddCommand(show)
	return cmd
}
