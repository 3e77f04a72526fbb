package weaviate

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/amnesia-dev/amnesia/store"
)

// options turns a configuration into Options: dsn is the server's URL,
// collection (or table) the class, subject the subject property, content
// the content properties, data_dir the server's PERSISTENCE_DATA_PATH.
func options(c store.Config) Options {
	class := c.Collection
	if class == "" {
		class = c.Table
	}
	return Options{Name: c.Name, URL: c.DSN, Class: class, Subject: c.Subject, Content: c.Content,
		Dimensions: c.Dimensions, DataDir: c.DataDir, DeleteOnly: c.Reclaim == "delete-only"}
}

func validateConfig(c store.Config) error {
	if c.Reclaim != "" && c.Reclaim != "full" && c.Reclaim != "delete-only" {
		return fmt.Errorf("reclaim must be full or delete-only, not %q", c.Reclaim)
	}
	if c.Collection != "" && c.Table != "" && c.Collection != c.Table {
		return fmt.Errorf("give the class as collection: or table:, not both")
	}
	return validate(options(c))
}

// Check implements store.CheckFunc: the server answers ready, the class
// exists with one unnamed vector and a text subject property, a search
// with a vector of the configured dimensions is accepted, and, when
// data_dir is set, the class's directory is there and the server's
// persistence settings (read from its process environment, when it runs
// on this machine) let an erasure be verified in the files. Read-only; the
// dimension check runs a nearVector search that asks for ids only.
func Check(ctx context.Context, c store.Config) []store.Problem {
	bad := func(key, format string, a ...any) []store.Problem {
		return []store.Problem{{Severity: store.SeverityError, Key: key, Message: fmt.Sprintf(format, a...)}}
	}
	if err := validateConfig(c); err != nil {
		return bad("", "%v", err)
	}
	o := options(c)
	base, token, _ := parseURL(o.URL)
	s := &Store{name: o.Name, base: base, token: token, class: o.Class, subject: o.Subject, dataDir: o.DataDir, hc: &http.Client{}}
	if s.subject == "" {
		s.subject = DefaultSubject
	}
	if _, err := s.call(ctx, http.MethodGet, "/v1/.well-known/ready", nil, nil, false); err != nil {
		return bad("dsn", "Weaviate at %s is not ready: %v", base, err)
	}
	cl, err := s.schema(ctx)
	if err != nil {
		return bad("dsn", "read the schema of class %s at %s: %v", s.class, base, err)
	}
	if cl == nil {
		return bad("collection", "%s has no class %s: is the collection name right (Weaviate capitalizes its first letter)?", base, s.class)
	}
	if err := cl.usable(s.subject); err != nil {
		return bad("subject", "class %s: %v", s.class, err)
	}
	for _, p := range o.Content {
		if cl.prop(p) == nil {
			return bad("content", "class %s has no property %q", s.class, p)
		}
	}
	var ps []store.Problem
	if p := cl.prop(s.subject); p.Tokenization != "field" {
		ps = append(ps, store.Problem{Severity: store.SeverityWarning, Key: "subject", Message: fmt.Sprintf("property %s of class %s is tokenized %q, not field: the by-filter probe still ANDs the id, but deleting by subject is refused (an Equal filter could match other subjects)", s.subject, s.class, p.Tokenization)})
	}
	if o.Dimensions > 0 {
		if msg := s.checkDims(ctx, o.Dimensions); msg != "" {
			return append(ps, store.Problem{Severity: store.SeverityError, Key: "dimensions", Message: msg})
		}
	}
	if c := cl.compression(); c != "" {
		ps = append(ps, store.Problem{Severity: store.SeverityWarning, Key: "collection", Message: fmt.Sprintf("class %s compresses its vectors (%s): the compressed codes cannot be searched for, so erasures stop at the logical level for the vector", s.class, c)})
	}
	if o.DataDir == "" {
		return append(ps, store.Problem{Severity: store.SeverityWarning, Key: "data_dir", Message: "data_dir is not set: without the server's PERSISTENCE_DATA_PATH the physical probe cannot run and erasures stop at the logical level"})
	}
	if fi, err := os.Stat(o.DataDir); err != nil || !fi.IsDir() {
		return append(ps, store.Problem{Severity: store.SeverityError, Key: "data_dir", Message: fmt.Sprintf("%s is not a readable directory: set data_dir to the server's PERSISTENCE_DATA_PATH as seen from this machine, or remove it", o.DataDir)})
	}
	if _, err := os.Stat(s.ClassDir()); err != nil {
		ps = append(ps, store.Problem{Severity: store.SeverityWarning, Key: "data_dir", Message: fmt.Sprintf("%s has no directory %s for class %s (yet): is data_dir the server's PERSISTENCE_DATA_PATH?", o.DataDir, strings.ToLower(s.class), s.class)})
	}
	env, ok := serverEnv(o.DataDir)
	if !ok {
		return append(ps, store.Problem{Severity: store.SeverityWarning, Key: "data_dir", Message: "no weaviate-server process on this machine has PERSISTENCE_DATA_PATH=" + o.DataDir + ": its persistence settings cannot be checked (docs/weaviate.md names them)"})
	}
	for _, p := range SettingProblems(env) {
		ps = append(ps, store.Problem{Severity: store.SeverityWarning, Key: "data_dir", Message: "server at " + base + ": " + p + " (docs/weaviate.md)"})
	}
	return ps
}

// checkDims runs a nearVector search with a unit vector of d dimensions,
// asking for ids only, and returns what is wrong, or "". The query holds
// no personal data, so the server's message may be quoted.
func (s *Store) checkDims(ctx context.Context, d int) string {
	v := make([]float32, d)
	v[0] = 1
	q := fmt.Sprintf("{ Get { %s(nearVector: {vector: %s}, limit: 1) { _additional { id } } } }", s.class, gqlVector(v))
	var res struct {
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if _, err := s.call(ctx, http.MethodPost, "/v1/graphql", map[string]string{"query": q}, &res, false); err != nil {
		return fmt.Sprintf("a search with a %d-dimensional vector failed: %v", d, err)
	}
	if len(res.Errors) > 0 {
		return fmt.Sprintf("class %s refuses a %d-dimensional vector (%s): set dimensions: to its vectors' size", s.class, d, firstLine(res.Errors[0].Message))
	}
	return ""
}

func init() {
	store.RegisterCheck(Type, []string{"dsn", "collection", "table", "subject", "content", "dimensions", "data_dir", "reclaim"}, Check)
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			return Open(ctx, options(c), create)
		},
		Validate: validateConfig,
		Location: func(c store.Config) string {
			o := options(c)
			base, _, err := parseURL(o.URL)
			if err != nil {
				return "class " + o.Class
			}
			return base + " class " + o.Class
		},
		List:  list,
		Proof: proof,
	})
}
