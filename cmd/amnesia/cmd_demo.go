package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/demo"
)

type demoOptions struct {
	dir  string
	json bool
}

func newDemoCommand() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo [--dir D] [--json]",
		Short: "The whole story on embedded stores: ingest, native delete, erasure, certificate, verification",
		Long: `Demo builds a SQLite document store and a sqlite-vec vector store in D (a new
temporary directory by default), ingests a synthetic corpus through capture,
shows what a plain DELETE leaves in the files, erases another person with
amnesia, and verifies the certificate offline. Nothing outside D is touched.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := o.dir
			if dir == "" {
				d, err := os.MkdirTemp("", "amnesia-demo-")
				if err != nil {
					return err
				}
				dir = d
			}
			w := cmd.OutOrStdout()
			if o.json {
				w = io.Discard
			}
			rep, err := demo.Run(cmd.Context(), dir, w)
			if err != nil {
				return err
			}
			if o.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			if !rep.Verified {
				return fmt.Errorf("demo: the certificate did not verify")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "directory for the demo's stores and state (default: a new temp dir)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object instead of the story")
	return cmd
}
