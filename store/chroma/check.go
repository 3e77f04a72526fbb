package chroma

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/store"
)

// ConfigKeys are the configuration keys a chroma store reads.
var ConfigKeys = []string{"name", "type", "dsn", "collection", "subject", "dimensions", "data_dir", "reclaim", "out_of_scope"}

// Check implements store.CheckFunc: the server answers its heartbeat, the
// collection exists, its dimension is the configured one, and data_dir,
// when given, is a Chroma persist directory (chroma.sqlite3 in it, readable).
// It reads the collection's description only, never a record.
func Check(ctx context.Context, c store.Config) []store.Problem {
	bad := func(key, format string, a ...any) []store.Problem {
		return []store.Problem{{Severity: store.SeverityError, Key: key, Message: fmt.Sprintf(format, a...)}}
	}
	if err := validate(c); err != nil {
		return bad("", "%v", err)
	}
	srv, _ := ParseDSN(c.DSN)
	cl := newClient(srv)
	defer cl.hc.CloseIdleConnections()
	if err := cl.heartbeat(ctx); err != nil {
		return bad("dsn", "the Chroma server at %s does not answer (%v): is `chroma run` started on that address?", srv.Location(), err)
	}
	coll, err := cl.getCollection(ctx, c.Collection)
	if isNotFound(err) {
		return bad("collection", "no collection %q at %s: is the name (and ?tenant=&database= in dsn) right?", c.Collection, srv.Location())
	}
	if err != nil {
		return bad("collection", "collection %q at %s: %v", c.Collection, srv.Location(), err)
	}
	var out []store.Problem
	switch {
	case coll.Dimension != nil && c.Dimensions > 0 && *coll.Dimension != c.Dimensions:
		out = append(out, store.Problem{Severity: store.SeverityError, Key: "dimensions", Message: fmt.Sprintf("collection %q has dimension %d, the configuration says %d", c.Collection, *coll.Dimension, c.Dimensions)})
	case coll.Dimension == nil && c.Dimensions > 0:
		out = append(out, store.Problem{Severity: store.SeverityWarning, Key: "dimensions", Message: fmt.Sprintf("collection %q is empty: Chroma fixes its dimension with the first record, so dimensions: %d could not be checked", c.Collection, c.Dimensions)})
	}
	if c.DataDir == "" {
		out = append(out, store.Problem{Severity: store.SeverityWarning, Key: "data_dir", Message: "data_dir is not set: the physical probe cannot run and the files Chroma leaves behind (old HNSW segments, free SQLite pages) cannot be cleaned; set it to the server's --path when this host can read it"})
		return out
	}
	// store.OpenRead, not os.Open: this process may hold Chroma's SQLite
	// file open (reclaim merges its full-text index), and closing another
	// descriptor of it would drop that connection's locks.
	_, _, done, err := store.OpenRead(filepath.Join(c.DataDir, SQLiteFile))
	if err != nil {
		out = append(out, store.Problem{Severity: store.SeverityError, Key: "data_dir", Message: fmt.Sprintf("%s: %v: data_dir must be the directory given to `chroma run --path`, readable and writable here", c.DataDir, err)})
		return out
	}
	done()
	return out
}

func validate(c store.Config) error {
	if _, err := ParseDSN(c.DSN); err != nil {
		return err
	}
	if c.Collection == "" {
		return fmt.Errorf("collection is required (the Chroma collection's name)")
	}
	switch c.Reclaim {
	case "", "full", "delete-only":
	default:
		return fmt.Errorf("reclaim: %q is not one of full, delete-only", c.Reclaim)
	}
	if c.Dimensions < 0 {
		return fmt.Errorf("dimensions: %d is negative", c.Dimensions)
	}
	return nil
}

func init() {
	store.RegisterCheck(Type, ConfigKeys, Check)
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			return Open(ctx, Options{
				Name: c.Name, DSN: c.DSN, Collection: c.Collection, SubjectKey: c.Subject,
				Dimensions: c.Dimensions, DataDir: c.DataDir, DeleteOnly: c.Reclaim == "delete-only",
			}, create)
		},
		Validate: validate,
		Location: func(c store.Config) string {
			srv, err := ParseDSN(c.DSN)
			if err != nil {
				return ""
			}
			return srv.Location() + " collection " + c.Collection
		},
	})
}
