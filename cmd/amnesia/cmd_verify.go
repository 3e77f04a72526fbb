package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/certificate"
)

type verifyOptions struct {
	publicKeys []string
	trust      []string
	witnesses  []string
	minWit     int
	tsaRoots   []string
	requireTS  bool
	origin     string
}

func newVerifyCommand(g *globalOptions) *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify <certificate file | certificate id> (--public-key <pem> | --trust <trust file>)",
		Short: "Check a certificate offline: signature, key id, schema, log inclusion, checkpoint, witnesses, timestamp",
		Long: `Verify checks an erasure certificate with nothing but the file and keys you
trust: no database, no store, no network. In order: the file's form; the DSSE
signature by a trusted key and the certificate schema; the key's retirement;
the transparency-log checkpoint's signature; the inclusion proof that places
the certificate in that checkpoint's tree; witness cosignatures (with
--witness-key and --witnesses); the RFC 3161 timestamp (with --tsa-root).
It prints what the certificate claims only when every check passed.

The trusted keys come from --public-key and --trust (the file 'amnesia keys
export' writes: every key of a keyring with its retirement time). A key
given more than once is retired from the earliest time given for it.

Given a certificate id (er-…, rv-…, rp-…) that is not a file, verify reads
the certificate from the installation (--state): from its PostgreSQL ledger,
where every host of the installation keeps its certificates, or from the
state directory's certificates/. The checks are the same.

` + exitCodesHelp,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(o.publicKeys) == 0 && len(o.trust) == 0 {
				return withCode(exitUsage, fmt.Errorf("--public-key or --trust is required: verification needs a key you trust"))
			}
			opts, err := o.options()
			if err != nil {
				return err
			}
			data, err := readCertificateArg(cmd.Context(), g, args[0])
			if err != nil {
				return err
			}
			res, err := certificate.VerifyBundle(cmd.Context(), data, opts)
			if err != nil {
				return err
			}
			p := res.Statement.Predicate
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "VALID certificate %s\n  signed by %s\n  subject %s, scope %q, reason %q\n  issued %s, valid until %s\n",
				p.CertificateID, p.KeyID, p.SubjectRef, p.Scope, p.Reason, p.IssuedAt, p.ValidUntil)
			c := p.Counts
			fmt.Fprintf(w, "  %d artifacts: %d verified (%d physical, %d logical), %d residual, %d unverified, %d out of scope, %d need a person; complete: %v\n",
				c.Artifacts, c.Verified, c.VerifiedPhysical, c.VerifiedLogical, c.Residual, c.Unverified, c.OutOfScope, c.NeedsHuman, p.Complete)
			fmt.Fprintf(w, "  logged: leaf %d of %s, checkpoint of %d leaves signed by the log key\n", res.LogIndex, res.Checkpoint.Origin, res.Checkpoint.Size)
			if len(o.witnesses) > 0 || len(res.Witnesses) > 0 {
				fmt.Fprintf(w, "  witnesses: %d cosigned (%s)\n", len(res.Witnesses), strings.Join(res.Witnesses, ", "))
			}
			if res.Unchecked > 0 {
				fmt.Fprintf(w, "  note: %d other signature(s) on the checkpoint were not checked (keys not given)\n", res.Unchecked)
			}
			if !res.Timestamp.IsZero() {
				how := "RFC 3161: signature, imprint and chain to the given root checked"
				if len(o.tsaRoots) == 0 {
					how = "RFC 3161: signature and imprint checked; the TSA is NOT trusted: give --tsa-root to check its chain"
				}
				fmt.Fprintf(w, "  timestamp: %s (%s)\n", res.Timestamp.UTC().Format(time.RFC3339), how)
			} else {
				fmt.Fprintf(w, "  timestamp: %s\n", res.TimestampNote)
			}
			if p.Expired(time.Now()) {
				fmt.Fprintf(w, "  note: the validity window ended %s; the signature is still valid\n", p.ValidUntil)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&o.publicKeys, "public-key", nil, "PEM public key (BEGIN PUBLIC KEY) of a signer you trust; repeat for rotated keys. FILE@RFC3339 marks the key retired from that time")
	cmd.Flags().StringArrayVar(&o.trust, "trust", nil, "trust `FILE` written by amnesia keys export (every key of a keyring, with retirement times); repeatable")
	cmd.Flags().StringArrayVar(&o.witnesses, "witness-key", nil, "a witness's verifier key (name+hash+base64, as `amnesia witness init` prints), or a file holding one; repeatable")
	cmd.Flags().IntVar(&o.minWit, "witnesses", 0, "cosignatures required from the --witness-key set (default: all given keys)")
	cmd.Flags().StringArrayVar(&o.tsaRoots, "tsa-root", nil, "PEM root certificate of a timestamp authority you trust; repeatable")
	cmd.Flags().BoolVar(&o.requireTS, "require-timestamp", false, "fail a certificate that carries no RFC 3161 timestamp")
	cmd.Flags().StringVar(&o.origin, "log-origin", "", "pin the transparency log: the checkpoint must name this origin (as `amnesia audit log-key` prints it)")
	return cmd
}

// certificateID is the form of a certificate id: an erasure's, a
// re-verification's or a replay's.
var certificateID = regexp.MustCompile(`^(er|rv|rp)-[0-9a-f]{8,64}$`)

// readCertificateArg reads the certificate verify was given: a file, or,
// when no such file exists and arg is a certificate id, the certificate of
// that id where the installation keeps it (saga.Durable).
func readCertificateArg(ctx context.Context, g *globalOptions, arg string) ([]byte, error) {
	data, err := os.ReadFile(arg)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !certificateID.MatchString(arg) {
		if err != nil {
			return nil, fmt.Errorf("read certificate: %w", err)
		}
		return data, nil
	}
	a, err := openApp(ctx, g)
	if err != nil {
		return nil, fmt.Errorf("read certificate %s from the installation: %w", arg, err)
	}
	defer a.Close()
	dur := a.env().Durable()
	data, err = dur.Certificate(ctx, arg)
	if err != nil {
		return nil, fmt.Errorf("read certificate %s from %s: %w", arg, dur.Where(), err)
	}
	return data, nil
}

// options turns the flags into certificate.VerifyOptions: the policy
// (certificate.LoadPolicy) a Go program gets for the same files.
func (o *verifyOptions) options() (certificate.VerifyOptions, error) {
	p, err := certificate.LoadPolicy(certificate.PolicyFiles{
		PublicKeys: o.publicKeys, TrustFiles: o.trust,
		WitnessKeys: o.witnesses, MinWitnesses: o.minWit,
		TSARoots: o.tsaRoots, RequireTimestamp: o.requireTS, Origin: o.origin,
	})
	if errors.Is(err, certificate.ErrPolicy) {
		return certificate.VerifyOptions{}, withCode(exitUsage, err)
	}
	if err != nil {
		return certificate.VerifyOptions{}, err
	}
	return p.Options()
}
