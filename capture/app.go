package capture

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/shred"
	"github.com/amnesia-dev/amnesia/store"
)

// App is an application's handle on an amnesia installation: the state
// directory that `amnesia init` created. It holds the installation's pepper
// (subject keys), the ledger named in amnesia.yaml, and the configured
// stores, each opened on first use. Applications name stores as amnesia.yaml
// does, nothing else: paths, DSNs, tables and dimensions come from the
// configuration. An App is safe for concurrent use.
type App struct {
	dir    *state.Dir
	ledger lineage.Ledger
	rec    *Recorder

	busy    sync.RWMutex // held (read) by Erase, (write) by Close
	mu      sync.Mutex   // guards what follows
	closed  bool
	stores  map[string]store.Store
	docs    map[string]*Docs
	vectors map[string]*Vectors
}

var errClosed = errors.New("capture: the App is closed")

// Option changes how Open opens an installation.
type Option func(*openOptions)

type openOptions struct {
	scope string
	seal  bool
}

// WithSealing turns crypto-shredding on (Recorder.SealContent): the App's
// wrappers encrypt content fields with their subject's data key, wrapped by
// the installation's master key (<state>/master.key, created on first use),
// and an erasure destroys the subject's key. See docs/crypto-shredding.md.
func WithSealing() Option { return func(o *openOptions) { o.seal = true } }

// WithScope records and erases in scope (a tenant) instead of the scope
// amnesia.yaml configures.
func WithScope(scope string) Option { return func(o *openOptions) { o.scope = scope } }

// ErrNotInitialized is returned by Open when stateDir holds no installation.
var ErrNotInitialized = state.ErrNotInitialized

// Open opens the installation in stateDir (the directory `amnesia init`
// created; the CLI's default is ".amnesia") and its ledger. Stores are
// opened when first asked for.
func Open(ctx context.Context, stateDir string, opts ...Option) (*App, error) {
	var o openOptions
	for _, fn := range opts {
		fn(&o)
	}
	dir, err := state.Open(stateDir)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	scope := o.scope
	if scope == "" {
		scope = dir.Config.Scope
	}
	l, err := lineage.Open(ctx, dir.LedgerSpec())
	if err != nil {
		return nil, fmt.Errorf("capture: open ledger: %w", err)
	}
	rec := New(l, dir.Keyer, scope)
	if o.seal {
		w, err := shred.LoadOrCreateLocal(dir.MasterKeyPath())
		if err == nil {
			err = rec.SealContent(w)
		}
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("capture: %w", err)
		}
	}
	// An embedding finds its chunk in any configured document store,
	// whether or not the application opened it.
	for _, sc := range dir.Config.Stores {
		if isDocType(sc.Type) {
			rec.addDocStore(sc.Name)
		}
	}
	return &App{dir: dir, ledger: l, rec: rec, stores: map[string]store.Store{}, docs: map[string]*Docs{}, vectors: map[string]*Vectors{}}, nil
}

// Recorder returns the recorder the App's wrappers record through.
func (a *App) Recorder() *Recorder { return a.rec }

// Scope returns the scope the App records and erases in.
func (a *App) Scope() string { return a.rec.scope }

// StateDir returns the state directory.
func (a *App) StateDir() string { return a.dir.Path }

// PublicKeyPath is the PEM public key a certificate of this installation
// verifies with (`amnesia verify <cert> --public-key <this>`).
func (a *App) PublicKeyPath() string { return a.dir.PublicKeyPath() }

// Docs returns the capture wrapper of the document store configured under
// name (type sqlite-doc or postgres), opening it, and creating its file or
// table when missing, on first use. The store's adapter package must be
// linked into the program (import _ "github.com/amnesia-dev/amnesia/store/
// sqlitedoc" or ".../store/pgdoc"); the error says which when it is not.
func (a *App) Docs(ctx context.Context, name string) (*Docs, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errClosed
	}
	if d, ok := a.docs[name]; ok {
		return d, nil
	}
	s, typ, err := a.open(ctx, name, "document", isDocType)
	if err != nil {
		return nil, err
	}
	ds, err := docStore(name, typ, s)
	if err != nil {
		return nil, err
	}
	d := a.rec.Docs(ds)
	a.docs[name] = d
	return d, nil
}

// Vectors returns the capture wrapper of the vector store configured under
// name (type sqlite-vec or pgvector), opening it, and creating its file or
// table when missing, on first use. The store's adapter package must be
// linked into the program (import _ "github.com/amnesia-dev/amnesia/store/
// sqlitevec" or ".../store/pgvector"); the error says which when it is not.
func (a *App) Vectors(ctx context.Context, name string) (*Vectors, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errClosed
	}
	if v, ok := a.vectors[name]; ok {
		return v, nil
	}
	s, typ, err := a.open(ctx, name, "vector", isVecType)
	if err != nil {
		return nil, err
	}
	vs, err := vectorStore(name, typ, s)
	if err != nil {
		return nil, err
	}
	v := a.rec.Vectors(vs)
	a.vectors[name] = v
	return v, nil
}

// open opens (once) the configured store name, which must be of a type ok
// accepts and whose capture wrapper is linked into the program; it returns
// the store and its type. a.mu is held.
func (a *App) open(ctx context.Context, name, what string, ok func(string) bool) (store.Store, string, error) {
	sc, err := a.dir.Config.Store(name)
	if err != nil {
		return nil, "", fmt.Errorf("capture: no store %q in %s/amnesia.yaml (configured: %s)", name, a.dir.Path, a.storeNames())
	}
	if !ok(sc.Type) {
		if !isDocType(sc.Type) && !isVecType(sc.Type) {
			return nil, "", notLinked(name, sc.Type)
		}
		other := "Vectors"
		if what == "vector" {
			other = "Docs"
		}
		return nil, "", fmt.Errorf("capture: store %q is of type %s, not a %s store: use %s(ctx, %q)", name, sc.Type, what, other, name)
	}
	if !wrapperLinked(sc.Type) {
		return nil, "", notLinked(name, sc.Type)
	}
	if s, ok := a.stores[name]; ok {
		return s, sc.Type, nil
	}
	s, err := a.dir.Config.OpenStore(ctx, sc, true)
	if err != nil {
		return nil, "", fmt.Errorf("capture: %w", err)
	}
	a.stores[name] = s
	return s, sc.Type, nil
}

func (a *App) storeNames() string {
	var names []string
	for _, sc := range a.dir.Config.Stores {
		names = append(names, sc.Name+" ("+sc.Type+")")
	}
	if len(names) == 0 {
		return "none: add stores to amnesia.yaml"
	}
	return strings.Join(names, ", ")
}

// Close closes the stores the App opened and the ledger.
func (a *App) Close() error {
	a.busy.Lock()
	defer a.busy.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	var errs []error
	for _, s := range a.stores {
		errs = append(errs, s.Close())
	}
	errs = append(errs, a.ledger.Close())
	return errors.Join(errs...)
}
