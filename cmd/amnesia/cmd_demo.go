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
	dir      string
	json     bool
	rag      bool
	redis    string
	redisDir string
}

func newDemoCommand() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo [--dir D] [--json] [--rag [--redis HOST:PORT [--redis-dir DIR]]]",
		Short: "The whole story on embedded stores: ingest, native delete, erasure, certificate, verification",
		Long: `Demo builds a SQLite document store and a sqlite-vec vector store in D (a new
temporary directory by default), ingests a synthetic corpus through capture,
shows what a plain DELETE leaves in the files, erases another person with
amnesia, and verifies the certificate offline. Nothing outside D is touched.

With --rag it tells the story of a whole RAG application instead: two vector
stores (sqlite-vec and chromem-go), an exact and a semantic LLM cache and chat
memory in Redis, a JSONL conversation log and a CSV fine-tuning set. Redis is
a private redis-server started in D (it must be on PATH), or the server given
with --redis (the demo writes keys of its own there and removes them at the
end; --redis-dir names its data directory so that its files can be read).`,
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
			var rep any
			verified := false
			if o.rag {
				r, err := demo.RunRAG(cmd.Context(), dir, demo.RAGOptions{RedisAddr: o.redis, RedisDir: o.redisDir}, w)
				if err != nil {
					return err
				}
				rep, verified = r, r.Verified
			} else {
				if o.redis != "" || o.redisDir != "" {
					return fmt.Errorf("demo: --redis and --redis-dir go with --rag")
				}
				r, err := demo.Run(cmd.Context(), dir, w)
				if err != nil {
					return err
				}
				rep, verified = r, r.Verified
			}
			if o.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			if !verified {
				return fmt.Errorf("demo: the certificate did not verify")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "directory for the demo's stores and state (default: a new temp dir)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object instead of the story")
	cmd.Flags().BoolVar(&o.rag, "rag", false, "a whole RAG application: two vector stores, LLM caches and chat memory in Redis, a log and a training set")
	cmd.Flags().StringVar(&o.redis, "redis", "", "with --rag: a Redis server (host:port or redis://…) to use instead of a private redis-server")
	cmd.Flags().StringVar(&o.redisDir, "redis-dir", "", "with --redis: the server's data directory, readable here, so that its AOF and RDB are scanned")
	return cmd
}
