package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

type consentOptions struct {
	scope string
	by    string
}

func newConsentCommand(g *globalOptions) *cobra.Command {
	o := &consentOptions{}
	cmd := &cobra.Command{
		Use:   "consent <subject | -> --by <who>",
		Short: "Record that an erased subject gave new consent, so that capturing their data is accepted again",
		Long: `After an erasure, capture refuses to record the subject's data again
(capture.ErrSubjectErased; a 409 conflict through 'amnesia serve'; exit 22 for a
command that captures). Consent records, in the ledger's hash chain, that the
person gave new consent: their keyed subject digest, the time and who recorded
it (--by: an application, ticket or operator name; never personal data). Writes
after it are accepted until the subject is erased again. The erased records' own
keys stay refused: new data takes new keys. 'amnesia trace' shows the consents.
Pass "-" to read the subject id from standard input.`,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(o.by) == "" {
				return withCode(exitUsage, errors.New("--by is required: who records the consent (an application, ticket or operator name)"))
			}
			raw, err := readSubject(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			scope := o.scope
			if scope == "" {
				scope = a.dir.Config.Scope
			}
			if err := subject.CheckNotSubject("--by", o.by, raw); err != nil {
				return err
			}
			k, err := a.dir.Keyer.Key(scope, raw)
			if err != nil {
				return withCode(exitUsage, err)
			}
			gd, ok := a.ledger.(lineage.SubjectGuard)
			if !ok {
				return fmt.Errorf("the ledger %T keeps no consents", a.ledger)
			}
			st, err := gd.SubjectState(cmd.Context(), scope, k)
			if err != nil {
				return err
			}
			c, err := gd.RecordConsent(cmd.Context(), lineage.Consent{Scope: scope, Subject: k, At: time.Now(), By: o.by})
			if err != nil {
				if errors.Is(err, subject.ErrPersonalData) {
					return err
				}
				return withCode(exitUsage, err)
			}
			a.log.Info("consent", "subject", k.Ref(), "scope", scope, "seq", c.Seq)
			fmt.Fprintf(cmd.OutOrStdout(), "new consent of %s in scope %q recorded at %s by %q (ledger event %d)\n", k.Ref(), scope, c.At.Format(time.RFC3339), c.By, c.Seq)
			if st.ErasedSeq == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "note: this subject was never erased here; capture did not need it")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.scope, "scope", "", "scope (tenant); default: the configured scope")
	cmd.Flags().StringVar(&o.by, "by", "", "who records the consent: an application, ticket or operator name (never personal data)")
	return cmd
}

// consentNote is the trace's lines on the subject's erasure refusal and
// consents ("" when the ledger keeps none and the subject was never erased).
func (a *app) consentNote(ctx context.Context, scope string, k subject.Key) string {
	g, ok := a.ledger.(lineage.SubjectGuard)
	if !ok {
		return ""
	}
	st, err := g.SubjectState(ctx, scope, k)
	if err != nil {
		return ""
	}
	cs, err := g.Consents(ctx, scope, k)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  new consent recorded %s by %q (ledger event %d)", c.At.Format(time.RFC3339), c.By, c.Seq)
	}
	switch {
	case st.Refused():
		fmt.Fprintf(&b, "\n  capture of this subject is refused since erasure %s (no new consent after it): 'amnesia consent' records one", st.Erasure)
	case st.ErasedSeq > 0:
		b.WriteString("\n  capture of this subject is accepted: new consent was recorded after its latest erasure")
	}
	return b.String()
}
