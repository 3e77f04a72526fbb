package lineage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Backend is a kind of ledger, registered by its package's init
// ([RegisterBackend]): lineage/sqliteledger registers "sqlite",
// lineage/pgledger "postgres".
type Backend struct {
	// Match reports whether spec names a ledger of this backend.
	Match func(spec string) bool
	// Open opens the ledger spec names. With create false it never creates
	// one: a missing or empty ledger is refused with an error that wraps
	// ErrNoLedger.
	Open func(ctx context.Context, spec string, create bool) (Ledger, error)
}

var (
	backendsMu sync.RWMutex
	backends   = map[string]Backend{}
)

// RegisterBackend makes a ledger backend available to [Open] and
// [OpenExisting]. It panics when name is registered twice or b lacks Match
// or Open (a programming error, like database/sql.Register).
func RegisterBackend(name string, b Backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if name == "" || b.Match == nil || b.Open == nil {
		panic("lineage: RegisterBackend needs a name, Match and Open")
	}
	if _, dup := backends[name]; dup {
		panic("lineage: backend " + name + " registered twice")
	}
	backends[name] = b
}

// Backends returns the names of the registered backends, sorted.
func Backends() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// backendImports names the package that registers each known backend, for
// the error of a spec no linked backend matches.
var backendImports = map[string]string{
	"sqlite":   "github.com/amnesia-dev/amnesia/lineage/sqliteledger",
	"postgres": "github.com/amnesia-dev/amnesia/lineage/pgledger",
}

// Open opens the ledger named by spec, with the registered backend that
// matches it: a PostgreSQL URL (postgres:// or postgresql://) is the
// "postgres" backend (lineage/pgledger), shared by every process that uses
// the same URL; anything else is the path of a "sqlite" ledger file
// (lineage/sqliteledger), created if missing. When the backend's package was
// not imported, the error says which import to add.
func Open(ctx context.Context, spec string) (Ledger, error) {
	return open(ctx, spec, true)
}

// OpenExisting opens the ledger named by spec like [Open], but never creates
// one: a SQLite file that is missing, empty or holds no amnesia tables, or a
// PostgreSQL schema without the ledger's tables, is refused with an error
// that wraps ErrNoLedger. Read-only tools and every command but `amnesia
// init` use it, so that a lost ledger is noticed instead of silently
// replaced by an empty one.
func OpenExisting(ctx context.Context, spec string) (Ledger, error) {
	return open(ctx, spec, false)
}

func open(ctx context.Context, spec string, create bool) (Ledger, error) {
	backendsMu.RLock()
	var found []string
	var b Backend
	for name, cand := range backends {
		if cand.Match(spec) {
			found, b = append(found, name), cand
		}
	}
	backendsMu.RUnlock()
	switch len(found) {
	case 1:
		return b.Open(ctx, spec, create)
	case 0:
		// The spec itself is not quoted: a PostgreSQL URL may hold a password.
		kind := BackendName(spec)
		return nil, fmt.Errorf("open ledger: no %s ledger backend is linked into this program: add import _ %q (linked: %s)",
			kind, backendImports[kind], orNone(Backends()))
	default:
		sort.Strings(found)
		return nil, fmt.Errorf("open ledger: the spec matches several ledger backends (%s)", strings.Join(found, ", "))
	}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// BackendName names the backend a spec is for, from its syntax alone:
// "postgres" for a PostgreSQL URL, "sqlite" for anything else. It needs no
// backend registered.
func BackendName(spec string) string {
	if IsPostgresDSN(spec) {
		return "postgres"
	}
	return "sqlite"
}

// IsPostgresDSN reports whether spec names a PostgreSQL ledger.
func IsPostgresDSN(spec string) bool {
	s := strings.ToLower(spec)
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}
