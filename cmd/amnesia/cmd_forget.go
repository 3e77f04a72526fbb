package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

type forgetOptions struct {
	scope        string
	reason       string
	yes          bool
	allowPartial bool
	verbose      bool
	host         string
}

func newForgetCommand(g *globalOptions) *cobra.Command {
	o := &forgetOptions{}
	cmd := &cobra.Command{
		Use:   "forget <subject | -> --reason <ticket>",
		Short: "Trace, confirm once, erase everywhere, verify and certify",
		Long: `Forget traces the subject, shows per store what will be erased, asks once for
confirmation (type "yes"; --yes for scripts; works without a terminal), then runs
the journaled erasure: suppress, delete, reclaim, probe, decide, certificate.
If it is interrupted, run the same command again: it resumes from the journal
and ends with the same certificate.

` + exitCodesHelp,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(o.reason) == "" {
				return withCode(exitUsage, errors.New("--reason is required (the request or ticket this erasure answers)"))
			}
			if err := subject.CheckFreeText("--reason", o.reason); err != nil {
				return err // before the state directory is opened: nothing is written
			}
			if err := checkHostFlag(o.host); err != nil {
				return err
			}
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			in := bufio.NewReader(cmd.InOrStdin())
			out := cmd.OutOrStdout()
			raw, err := readSubject(args[0], in)
			if err != nil {
				return err
			}
			if err := subject.CheckNotSubject("--reason", o.reason, raw); err != nil {
				return err
			}
			// An interrupted erasure of this subject is finished first, with
			// the trace it started from (no second confirmation: it was given).
			if pending, err := a.pending(cmd.Context(), raw, o.scope); err != nil {
				return err
			} else if pending != nil {
				if err := a.checkHost(pending, o.host); err != nil {
					return err
				}
				fmt.Fprintf(out, "resuming the interrupted erasure %s of %s\n", saga.ID(pending.ID), pending.SubjectRef)
				skip, err := a.env().Preflight(cmd.Context(), cmd.ErrOrStderr(), pending, o.allowPartial)
				if err != nil {
					return err
				}
				return a.erase(cmd.Context(), out, cmd.ErrOrStderr(), pending, o.reason, erasure.Options{AllowPartial: o.allowPartial, Skip: skip}, o.verbose)
			}
			t, err := a.trace(cmd.Context(), raw, o.scope, nil)
			if err != nil {
				return err
			}
			if err := a.checkHost(t, o.host); err != nil {
				return err
			}
			printTrace(out, a.dir, a.env().Durable(), t)
			skip, err := a.env().Preflight(cmd.Context(), cmd.ErrOrStderr(), t, o.allowPartial)
			if err != nil {
				return err
			}
			if !o.yes && !confirm(out, in, t) {
				return withCode(exitAborted, errors.New("aborted: nothing was erased"))
			}
			return a.erase(cmd.Context(), out, cmd.ErrOrStderr(), t, o.reason, erasure.Options{AllowPartial: o.allowPartial, Skip: skip}, o.verbose)
		},
	}
	cmd.Flags().StringVar(&o.scope, "scope", "", "scope (tenant); default: the configured scope")
	cmd.Flags().StringVar(&o.reason, "reason", "", "request or ticket reference (required; goes into the certificate: no personal data)")
	cmd.Flags().BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&o.allowPartial, "allow-partial", false, allowPartialHelp)
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "print one line per artifact and each store's evidence, not only one line per store")
	cmd.Flags().StringVar(&o.host, "host", "", hostHelp)
	return cmd
}

// hostHelp is the help of forget's and erase's --host.
const hostHelp = "this host's name, when stores in files have owners (owner: in amnesia.yaml): the erasure runs here only if this host holds the trace's stores in files; queue it (erase --queue) for another host's worker"

// checkHostFlag checks the form of --host before anything is opened.
func checkHostFlag(host string) error {
	if host != "" && !state.ValidHostName(host) {
		return withCode(exitUsage, fmt.Errorf("--host %q: want a host name (letters, digits, '.', '-', '_'), as in the stores' owner: keys", host))
	}
	return nil
}

// checkHost refuses to run the erasure of t on this host when its
// artifacts are in stores in files that another host holds (owner: in
// amnesia.yaml), or when stores have owners and --host does not say which
// host this is (worker.CheckHost, which capture.App.Erase makes too). The
// configured path of such a store names a file on its owner's disk: here
// it may be missing, or another file. Nothing is erased; the message says
// how to queue the erasure for the owner's worker, which claims only the
// erasures of the stores its host holds.
func (a *app) checkHost(t *lineage.Trace, host string) error {
	err := worker.CheckHost(a.dir.Config, t, host)
	var he *worker.HostError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &he):
		return withCode(exitUsage, fmt.Errorf("%w: nothing was erased", err))
	}
	queue := fmt.Sprintf("queue it for that host's worker (amnesia trace, then amnesia erase --trace ID --queue), or run this command there with --host %s: nothing was erased", he.Owner)
	if he.Host == "" {
		return withCode(exitUsage, fmt.Errorf("the trace's stores in files are held by host %s (owner: in amnesia.yaml) and --host does not say which host this is: %s", he.Owner, queue))
	}
	return withCode(exitUsage, fmt.Errorf("the trace's stores in files are held by host %s (owner: in amnesia.yaml), not by %s: %s", he.Owner, he.Host, queue))
}

// pending returns an unfinished erasure of the raw subject, if any.
func (a *app) pending(ctx context.Context, raw, scope string) (*lineage.Trace, error) {
	if scope == "" {
		scope = a.dir.Config.Scope
	}
	k, err := a.dir.Keyer.Key(scope, raw)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	return a.env().Pending(ctx, k, scope)
}

func confirm(out io.Writer, in *bufio.Reader, t *lineage.Trace) bool {
	fmt.Fprintf(out, "Erase %d artifacts of %s? Type \"yes\" to go on: ", len(t.Artifacts), t.SubjectRef)
	line, err := in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	fmt.Fprintln(out)
	return strings.TrimSpace(line) == "yes"
}

type eraseOptions struct {
	trace        string
	reason       string
	queue        bool
	due          string
	allowPartial bool
	verbose      bool
	host         string
}

func newEraseCommand(g *globalOptions) *cobra.Command {
	o := &eraseOptions{}
	cmd := &cobra.Command{
		Use:   "erase --trace <id> --reason <ticket>",
		Short: "Erase exactly the artifacts of a saved trace (no prompt)",
		Long: `Erase runs the erasure of a trace saved by 'amnesia trace' (traces/<id>.json, or
a path). A new erasure is refused when the ledger no longer gives the same trace
(exit 5); an interrupted one resumes from its journal.

` + exitCodesHelp,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.trace == "" {
				return withCode(exitUsage, errors.New("--trace is required"))
			}
			if err := subject.CheckFreeText("--reason", o.reason); err != nil {
				return err
			}
			if err := checkHostFlag(o.host); err != nil {
				return err
			}
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			t, err := a.env().LoadTrace(cmd.Context(), o.trace)
			if err != nil {
				return err
			}
			if o.queue {
				return a.enqueue(cmd.Context(), cmd.OutOrStdout(), t, o.reason, o.due)
			}
			if o.due != "" {
				return withCode(exitUsage, errors.New("--due goes with --queue: an erasure run at once has no due date"))
			}
			if strings.TrimSpace(o.reason) == "" && !a.env().Started(cmd.Context(), t) {
				return withCode(exitUsage, errors.New("--reason is required for a new erasure"))
			}
			if err := a.checkHost(t, o.host); err != nil {
				return err
			}
			skip, err := a.env().Preflight(cmd.Context(), cmd.ErrOrStderr(), t, o.allowPartial)
			if err != nil {
				return err
			}
			return a.erase(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), t, o.reason, erasure.Options{AllowPartial: o.allowPartial, Skip: skip}, o.verbose)
		},
	}
	cmd.Flags().StringVar(&o.trace, "trace", "", "trace id (from 'amnesia trace') or path to a trace file")
	cmd.Flags().StringVar(&o.reason, "reason", "", "request or ticket reference (goes into the certificate: no personal data)")
	cmd.Flags().BoolVar(&o.queue, "queue", false, "queue the erasure in the ledger for 'amnesia worker' instead of running it; its artifacts are suppressed at once")
	cmd.Flags().StringVar(&o.due, "due", "", "with --queue: the erasure's due date (RFC 3339, at most one month away; default: now + erasure.deadline of amnesia.yaml)")
	cmd.Flags().BoolVar(&o.allowPartial, "allow-partial", false, allowPartialHelp)
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "print one line per artifact and each store's evidence, not only one line per store")
	cmd.Flags().StringVar(&o.host, "host", "", hostHelp)
	return cmd
}

// erase runs (or resumes) the erasure of t and prints its outcome; an
// incomplete certificate is a saga.IncompleteError (exit 7).
func (a *app) erase(ctx context.Context, out, progress io.Writer, t *lineage.Trace, reason string, o erasure.Options, verbose bool) error {
	o.Progress = progress
	res, err := a.env().Run(ctx, t, reason, o)
	if err != nil {
		return err
	}
	printResult(out, res, verbose)
	return res.Err()
}

// printResult prints the outcome of a finished erasure.
func printResult(out io.Writer, res *saga.Result, verbose bool) {
	if res.Follows != "" {
		fmt.Fprintf(out, "this erasure continues %s, whose certificate was incomplete; its certificate links to it (predicate.follows)\n", res.Follows)
	}
	printOutcome(out, res, verbose)
}
