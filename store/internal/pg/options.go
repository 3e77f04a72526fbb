// Package pg holds what the PostgreSQL adapters (pgdoc, pgvector) share: one
// connection per store, table names, the reclaim modes with their lock and
// statement timeouts, the residue states a busy database can leave (locks,
// snapshots, replication slots, prepared transactions, INVALID indexes), and
// the physical probe over relation and WAL files.
//
// Nothing in this package logs or returns record content, vector bytes or
// row keys: errors name statements and relations, never values.
package pg

import (
	"errors"
	"fmt"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// Reclaim modes.
const (
	// ModeFull deletes, then rewrites everything that held the rows:
	// VACUUM (INDEX_CLEANUP ON), REINDEX INDEX CONCURRENTLY of the indexes
	// that hold record bytes, VACUUM FULL, CHECKPOINT, and WAL rotation.
	ModeFull = "full"
	// ModeDeleteOnly deletes and verifies; reclaim is deferred and reported
	// as PENDING-reclaim-deferred.
	ModeDeleteOnly = "delete-only"
)

// Defaults.
const (
	DefaultLockTimeout = 5 * time.Second
	// DefaultBackoff is the first retry delay; it doubles per retry up to
	// MaxBackoff.
	DefaultBackoff = 500 * time.Millisecond
	MaxBackoff     = 30 * time.Second
	maxRetries     = 10
)

// Options is the PostgreSQL part of a store configuration.
type Options struct {
	Mode             string        // ModeFull or ModeDeleteOnly
	LockTimeout      time.Duration // every reclaim statement runs with SET lock_timeout; also bounds the wait in statistics
	StatementTimeout time.Duration // 0: none
	Retries          int           // retries of a timed-out statement, with exponential backoff
	Backoff          time.Duration // first retry delay
	DataDir          string        // server data directory readable by this process; "" = read through SQL
}

// ParseOptions reads and checks the PostgreSQL fields of c.
func ParseOptions(c store.Config) (Options, error) {
	o := Options{Mode: c.Reclaim, LockTimeout: DefaultLockTimeout, Retries: c.Retries, Backoff: DefaultBackoff, DataDir: c.DataDir}
	switch o.Mode {
	case "":
		o.Mode = ModeFull
	case ModeFull, ModeDeleteOnly:
	default:
		return o, fmt.Errorf("reclaim must be %q or %q, got %q", ModeFull, ModeDeleteOnly, c.Reclaim)
	}
	if c.LockTimeout != "" {
		d, err := time.ParseDuration(c.LockTimeout)
		if err != nil || d < time.Millisecond {
			return o, fmt.Errorf("lock_timeout must be a Go duration of at least 1ms, got %q", c.LockTimeout)
		}
		o.LockTimeout = d
	}
	if c.StatementTimeout != "" {
		d, err := time.ParseDuration(c.StatementTimeout)
		if err != nil || d < time.Millisecond {
			return o, fmt.Errorf("statement_timeout must be a Go duration of at least 1ms, got %q", c.StatementTimeout)
		}
		o.StatementTimeout = d
	}
	if o.Retries < 0 || o.Retries > maxRetries {
		return o, fmt.Errorf("retries must be 0..%d, got %d", maxRetries, o.Retries)
	}
	return o, nil
}

// ValidateConfig checks the fields every PostgreSQL adapter needs.
func ValidateConfig(c store.Config) error {
	if c.DSN == "" {
		return errors.New("dsn is required")
	}
	if c.Table != "" {
		if _, err := ParseTable(c.Table); err != nil {
			return err
		}
	}
	_, err := ParseOptions(c)
	return err
}

// backoff returns the delay before retry i (0-based).
func (o Options) backoff(i int) time.Duration {
	d := o.Backoff
	if d <= 0 {
		d = DefaultBackoff
	}
	for ; i > 0 && d < MaxBackoff; i-- {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// ms formats d for a SET statement.
func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }
