package main

import (
	"fmt"
	"os"
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

func newVerifyCommand() *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify <certificate> (--public-key <pem> | --trust <trust file>)",
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
			data, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("read certificate: %w", err)
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

// options turns the flags into certificate.VerifyOptions.
func (o *verifyOptions) options() (certificate.VerifyOptions, error) {
	var opts certificate.VerifyOptions
	for _, spec := range o.publicKeys {
		path, retired := spec, time.Time{}
		if i := strings.LastIndex(spec, "@"); i > 0 {
			if t, err := time.Parse(time.RFC3339, spec[i+1:]); err == nil {
				path, retired = spec[:i], t
			}
		}
		pemBytes, err := os.ReadFile(path)
		if err != nil {
			return opts, fmt.Errorf("read public key: %w", err)
		}
		pub, err := certificate.ParsePublicKeyPEM(pemBytes)
		if err != nil {
			return opts, fmt.Errorf("read public key %s: %w", path, err)
		}
		opts.Keys = addTrustedKey(opts.Keys, certificate.TrustedKey{Public: pub, Retired: retired})
	}
	for _, path := range o.trust {
		b, err := os.ReadFile(path)
		if err != nil {
			return opts, fmt.Errorf("read trust file: %w", err)
		}
		tf, err := certificate.ParseTrustFile(b)
		if err != nil {
			return opts, fmt.Errorf("%s: %w", path, err)
		}
		for _, k := range tf.TrustedKeys() {
			opts.Keys = addTrustedKey(opts.Keys, k)
		}
	}
	seen := map[string]bool{}
	for _, w := range o.witnesses {
		v, err := parseWitnessKey(w)
		if err != nil {
			return opts, withCode(exitUsage, err)
		}
		id := fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash())
		if seen[id] { // the same key twice counts once
			continue
		}
		seen[id] = true
		opts.Witnesses = append(opts.Witnesses, v)
	}
	if o.minWit < 0 {
		return opts, withCode(exitUsage, fmt.Errorf("--witnesses %d: want a count of cosignatures, 0 or more", o.minWit))
	}
	opts.MinWitnesses = o.minWit
	if o.minWit == 0 {
		opts.MinWitnesses = len(opts.Witnesses)
	}
	if o.minWit > len(opts.Witnesses) {
		return opts, withCode(exitUsage, fmt.Errorf("--witnesses %d, but only %d --witness-key given", o.minWit, len(opts.Witnesses)))
	}
	check, err := timestampChecker(o.tsaRoots)
	if err != nil {
		return opts, err
	}
	opts.Timestamp = check
	opts.TimestampTrusted = len(o.tsaRoots) > 0
	opts.RequireTimestamp = o.requireTS
	opts.Origin = o.origin
	return opts, nil
}

// addTrustedKey adds k to keys; a key already there keeps one entry,
// retired from the earlier of the two times (not retired only if neither
// says it is).
func addTrustedKey(keys []certificate.TrustedKey, k certificate.TrustedKey) []certificate.TrustedKey {
	for i := range keys {
		if !keys[i].Public.Equal(k.Public) {
			continue
		}
		if !k.Retired.IsZero() && (keys[i].Retired.IsZero() || k.Retired.Before(keys[i].Retired)) {
			keys[i].Retired = k.Retired
		}
		return keys
	}
	return append(keys, k)
}
