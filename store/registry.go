package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// Config is one configured store, as amnesia.yaml gives it. Each adapter
// reads the fields it needs and rejects a configuration it cannot use.
type Config struct {
	Name   string `yaml:"name"`
	Type   string `yaml:"type"`
	Path   string `yaml:"path,omitempty"`   // file-based stores
	DSN    string `yaml:"dsn,omitempty"`    // server stores (PostgreSQL)
	Table  string `yaml:"table,omitempty"`  // table or collection
	Schema string `yaml:"schema,omitempty"` // adapter-specific layout, e.g. "langchain" (pgvector: the same as preset)
	// Preset names a framework's table layout (pgvector: default,
	// langchain, langchaingo, llamaindex); Mapping describes the table, or
	// overrides the preset's fields.
	Preset           string   `yaml:"preset,omitempty"`
	Mapping          *Mapping `yaml:"mapping,omitempty"`
	Dimensions       int      `yaml:"dimensions,omitempty"`        // vector stores
	Reclaim          string   `yaml:"reclaim,omitempty"`           // "full" (default) or "delete-only"
	LockTimeout      string   `yaml:"lock_timeout,omitempty"`      // Go duration; default 5s
	StatementTimeout string   `yaml:"statement_timeout,omitempty"` // Go duration; default none
	Retries          int      `yaml:"retries,omitempty"`           // reclaim retries with backoff; default 0
	DataDir          string   `yaml:"data_dir,omitempty"`          // server's data directory, when the physical probe may read it
	// ReclaimWait bounds how long a reclaim waits for the server's own
	// background rewrite (redis: BGREWRITEAOF, BGSAVE); Go duration.
	ReclaimWait string `yaml:"reclaim_wait,omitempty"`
	// Docstore names the configured store that holds the texts of a
	// vectors-only store (faiss), so that its certificate says where they
	// are covered.
	Docstore string `yaml:"docstore,omitempty"`
	// Collection is the collection inside a store that holds several
	// (chromem).
	Collection string `yaml:"collection,omitempty"`
	// Host is a managed store's endpoint (pinecone: the index host,
	// https://<index>-<project>.svc.<region>.pinecone.io); APIKey its API
	// key, given as $VAR so that it stays in the environment (amnesia never
	// writes it anywhere); Namespace the namespace inside the index ("" is
	// the default namespace); ConsistencyWait (Go duration) bounds how long
	// a probe re-queries an eventually consistent store for a deletion to
	// become visible.
	Host            string `yaml:"host,omitempty"`
	APIKey          string `yaml:"api_key,omitempty"`
	Namespace       string `yaml:"namespace,omitempty"`
	ConsistencyWait string `yaml:"consistency_wait,omitempty"`
	// Compress says the store's files are gzip-compressed (chromem).
	Compress bool `yaml:"compress,omitempty"`
	// Format is a file store's format: "jsonl", "csv" or "parquet".
	Format string `yaml:"format,omitempty"`
	// Key is the field or column that holds a file store's record key;
	// Subject the optional one that holds its subject tag; Content the
	// fields that hold its content (file stores).
	Key     string   `yaml:"key,omitempty"`
	Subject string   `yaml:"subject,omitempty"`
	Content []string `yaml:"content,omitempty"`
	// OutOfScope marks a store the operator has declared outside what
	// erasures must cover: when it cannot be reached, certificates still
	// list it as unreachable, but it does not make them incomplete.
	OutOfScope bool `yaml:"out_of_scope,omitempty"`
	// Nearby turns on the near-duplicate search and the retrieval-drift
	// measurement for the store (similar.go, docs/nearby.md); any type.
	Nearby *Nearby `yaml:"nearby,omitempty"`
	// Owner is the host whose disk holds a store in files (sqlite-doc,
	// sqlite-vec, faiss, chromem, file): the queue routes its erasures to
	// the worker started with --host <owner>. amnesia.yaml's parser allows
	// it only for types that read a path.
	Owner string `yaml:"owner,omitempty"`
}

// Opener opens a configured store. With create false, a store that does not
// exist is an error wrapping ErrUnavailable.
type Opener func(ctx context.Context, c Config, create bool) (Store, error)

// Adapter is what an adapter type registers.
type Adapter struct {
	Open Opener
	// Validate checks a configuration without connecting; it may be nil.
	Validate func(Config) error
	// Location names where a configured server store is, for people (e.g.
	// host:port/database and table), never credentials; it may be nil.
	Location func(Config) string
	// List enumerates the configured store's records read-only (see
	// store.List); nil when the type cannot.
	List func(ctx context.Context, c Config, fn func(Listed) error) error
	// Proof says, without connecting, the strongest verification level an
	// erasure from c can reach ("physical" or "logical") and why, in one
	// line; nil when the adapter does not say.
	Proof func(c Config) (level, why string)
}

var (
	regMu   sync.RWMutex
	openers = map[string]Adapter{}
)

// Register makes an adapter type available to configuration. Adapters call
// it from init; registering a type twice panics.
func Register(typ string, a Adapter) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := openers[typ]; dup {
		panic("store: type registered twice: " + typ)
	}
	openers[typ] = a
}

// Validate checks a configuration against its adapter type.
func Validate(c Config) error {
	regMu.RLock()
	a, ok := openers[c.Type]
	regMu.RUnlock()
	if !ok {
		return unknownType(c.Type)
	}
	if err := c.Nearby.Validate(); err != nil {
		return err
	}
	if a.Validate != nil {
		return a.Validate(c)
	}
	return nil
}

func adapter(typ string) (Adapter, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	a, ok := openers[typ]
	return a, ok
}

// Proof returns the strongest verification level an erasure from c can
// reach and why (Adapter.Proof); "unknown" when the adapter does not say.
func Proof(c Config) (level, why string) {
	a, ok := adapter(c.Type)
	if !ok || a.Proof == nil {
		return "unknown", "the adapter does not say"
	}
	return a.Proof(c)
}

// Location returns where c's store is, as its adapter type names it (see
// Adapter.Location); false when the type is not linked or names none.
func Location(c Config) (string, bool) {
	regMu.RLock()
	a, ok := openers[c.Type]
	regMu.RUnlock()
	if !ok || a.Location == nil {
		return "", false
	}
	return a.Location(c), true
}

// adapterImports names the package that registers each of amnesia's own
// adapter types: the import a program adds to open stores of that type.
var adapterImports = map[string]string{
	"sqlite-doc": "github.com/amnesia-dev/amnesia/store/sqlitedoc",
	"sqlite-vec": "github.com/amnesia-dev/amnesia/store/sqlitevec",
	"postgres":   "github.com/amnesia-dev/amnesia/store/pgdoc",
	"pgvector":   "github.com/amnesia-dev/amnesia/store/pgvector",
	"chromem":    "github.com/amnesia-dev/amnesia/store/chromem",
	"chroma":     "github.com/amnesia-dev/amnesia/store/chroma",
	"file":       "github.com/amnesia-dev/amnesia/store/file",
	"weaviate":   "github.com/amnesia-dev/amnesia/store/weaviate",
	"pinecone":   "github.com/amnesia-dev/amnesia/store/pinecone",
	"redis":      "github.com/amnesia-dev/amnesia/store/redis",
}

// unknownType is the error for a type no linked adapter registered: for one
// of amnesia's own types, it names the import that registers it.
func unknownType(typ string) error {
	if imp, ok := adapterImports[typ]; ok {
		return fmt.Errorf("type %q is not linked into this program: add import _ %q (linked: %v)", typ, imp, Types())
	}
	return fmt.Errorf("unknown type %q (known: %v)", typ, Types())
}

// Types returns the registered adapter types, sorted.
func Types() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(openers))
	for t := range openers {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Open opens a configured store through its registered adapter.
func Open(ctx context.Context, c Config, create bool) (Store, error) {
	regMu.RLock()
	a, ok := openers[c.Type]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("open store %q: %w", c.Name, unknownType(c.Type))
	}
	if a.Validate != nil {
		if err := a.Validate(c); err != nil {
			return nil, fmt.Errorf("open store %q: %w", c.Name, err)
		}
	}
	return a.Open(ctx, c, create)
}

// checkSpec is what RegisterCheck records for an adapter type.
type checkSpec struct {
	keys  []string
	check CheckFunc
}

var checks = map[string]checkSpec{}

// RegisterCheck records an adapter type's readiness check and the
// configuration keys the type reads (name and type included): amnesia.yaml
// refuses any other key on a store of that type. Adapters call it from
// init, next to Register; registering a type's check twice panics.
func RegisterCheck(typ string, keys []string, fn CheckFunc) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := checks[typ]; dup {
		panic("store: check registered twice: " + typ)
	}
	ks := append([]string(nil), keys...)
	for _, k := range CommonKeys {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	checks[typ] = checkSpec{keys: ks, check: fn}
}

// CommonKeys are the configuration keys every store type reads, whatever
// keys its adapter registers: its name and type, and out_of_scope (see
// Config.OutOfScope), which the saga reads, not the adapter.
var CommonKeys = []string{"name", "type", "out_of_scope"}

// Keys returns the configuration keys an adapter type reads, or nil when the
// type registered none (then every key of Config is accepted).
func Keys(typ string) []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return append([]string(nil), checks[typ].keys...)
}

// Check runs the readiness check of c's adapter type (see CheckFunc). A
// configuration the adapter rejects is an error Problem; a type without a
// registered check gets a warning that its readiness is not known.
func Check(ctx context.Context, c Config) []Problem {
	if err := Validate(c); err != nil {
		return []Problem{{Severity: SeverityError, Message: err.Error()}}
	}
	regMu.RLock()
	spec, ok := checks[c.Type]
	regMu.RUnlock()
	if !ok || spec.check == nil {
		return []Problem{{Severity: SeverityWarning, Message: "adapter type " + c.Type + " has no readiness check: nothing was checked"}}
	}
	return spec.check(ctx, c)
}
