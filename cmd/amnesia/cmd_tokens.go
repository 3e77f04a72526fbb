package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
)

func newTokensCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "Create, list and revoke the bearer tokens of 'amnesia serve'",
		Long: `Tokens authenticate calls to 'amnesia serve'. Each has a role and the scopes
(tenants) it may touch; anything outside them is refused.

  capture   record lineage only (POST /v1/lineage)
  operator  trace, create, preview and confirm erasure requests, read requests,
            certificates and the log
  auditor   read requests, certificates and the log; verify certificates

A token is shown once, when created; <state>/tokens.json keeps only its SHA-256.
A running serve sees new and revoked tokens at once.`,
		Args: usageArgs(0),
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	var role, name string
	var scopes []string
	create := &cobra.Command{
		Use:   "create --role capture|operator|auditor --scope S [--scope S2] [--name N]",
		Short: "Create a token and print it (once)",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			if len(scopes) == 0 {
				scopes = []string{dir.Config.Scope}
			}
			secret, info, err := service.CreateToken(dir.Path, name, service.Role(role), scopes, time.Now())
			if errors.Is(err, service.ErrInvalid) {
				return withCode(exitUsage, fmt.Errorf("tokens create: %w", err))
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s\n", secret)
			fmt.Fprintf(cmd.ErrOrStderr(), "created token %s (role %s, scopes %s): the line above is shown once; store it in your secret manager\n",
				info.ID, info.Role, strings.Join(info.Scopes, ","))
			return nil
		},
	}
	create.Flags().StringVar(&role, "role", "", "capture, operator or auditor (required)")
	create.Flags().StringArrayVar(&scopes, "scope", nil, "a scope (tenant) the token may touch; repeatable (default: the configured scope)")
	create.Flags().StringVar(&name, "name", "", "what the token is for, e.g. ingest-service (no personal data)")
	create.MarkFlagRequired("role")
	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			ts, err := service.ListTokens(dir.Path)
			if err != nil {
				return err
			}
			if len(ts) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no tokens: create one with 'amnesia tokens create --role R --scope S'")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tROLE\tSCOPES\tCREATED\tREVOKED")
			for _, t := range ts {
				rev := "-"
				if t.Revoked != nil {
					rev = t.Revoked.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, orDash(t.Name), t.Role, strings.Join(t.Scopes, ","), t.Created.Format(time.RFC3339), rev)
			}
			return tw.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke <id>",
		Short: "Revoke a token: refused from now on",
		Args:  usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			if err := service.RevokeToken(dir.Path, args[0], time.Now()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked token %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
