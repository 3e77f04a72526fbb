package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/certificate"
)

type verifyOptions struct {
	publicKey string
}

func newVerifyCommand() *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify <certificate> --public-key <pem>",
		Short: "Check a certificate offline: signature, key id, schema",
		Long: `Verify checks an erasure certificate with nothing but the file and a pinned
public key: no database, no store, no network. It prints what the certificate
claims only when it is valid.

` + exitCodesHelp,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.publicKey == "" {
				return withCode(exitUsage, fmt.Errorf("--public-key is required: verification needs a key you trust"))
			}
			pemBytes, err := os.ReadFile(o.publicKey)
			if err != nil {
				return fmt.Errorf("read public key: %w", err)
			}
			pub, err := certificate.ParsePublicKeyPEM(pemBytes)
			if err != nil {
				return fmt.Errorf("read public key %s: %w", o.publicKey, err)
			}
			env, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("read certificate: %w", err)
			}
			st, err := certificate.Verify(cmd.Context(), env, pub)
			if err != nil {
				return err
			}
			p := st.Predicate
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "VALID certificate %s\n  signed by %s\n  subject %s, scope %q, reason %q\n  issued %s, valid until %s\n",
				p.CertificateID, p.KeyID, p.SubjectRef, p.Scope, p.Reason, p.IssuedAt, p.ValidUntil)
			c := p.Counts
			fmt.Fprintf(w, "  %d artifacts: %d verified (%d physical, %d logical), %d residual, %d unverified, %d out of scope, %d need a person; complete: %v\n",
				c.Artifacts, c.Verified, c.VerifiedPhysical, c.VerifiedLogical, c.Residual, c.Unverified, c.OutOfScope, c.NeedsHuman, p.Complete)
			if p.Expired(time.Now()) {
				fmt.Fprintf(w, "  note: the validity window ended %s; the signature is still valid\n", p.ValidUntil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.publicKey, "public-key", "", "PEM public key (BEGIN PUBLIC KEY) of the signer")
	return cmd
}
