//go:build faiss

package faiss

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/store"
)

// Check implements store.CheckFunc: the index file exists (it is never
// created here), its header names an index amnesia erases (IDMap or IDMap2
// over Flat, IVF-Flat or HNSW-Flat) whose vectors are all in the file, and
// its dimension is the configured one. It reads the file's first 64 bytes
// only, never a vector.
func Check(_ context.Context, c store.Config) []store.Problem {
	l, err := readLayout(c.Path)
	if err != nil {
		return []store.Problem{{Severity: store.SeverityError, Key: "path", Message: err.Error()}}
	}
	if c.Dimensions > 0 && l.dim != c.Dimensions {
		return []store.Problem{{Severity: store.SeverityError, Key: "dimensions", Message: fmt.Sprintf("%s holds %d-dimension vectors (%s), but dimensions is %d", c.Path, l.dim, l, c.Dimensions)}}
	}
	return nil
}

func init() {
	store.RegisterCheck(Type, []string{"name", "type", "path", "dimensions", "schema", "docstore", "lock_timeout"}, Check)
}
