package pgledger

// Reads of the PostgreSQL ledger (Lookup, Suppressed, Head, Events, lineage.View) and
// its connection pool.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// Lookup implements lineage.Ledger.
func (l *Ledger) Lookup(ctx context.Context, scope, store, key string) (*lineage.Artifact, error) {
	var a *lineage.Artifact
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		var err error
		a, err = scanArtifact(c.QueryRow(ctx, `SELECT id, scope, subject, kind, store, key, digest FROM artifacts WHERE scope = $1 AND store = $2 AND key = $3`, scope, store, key))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, lineage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up artifact: %w", err)
	}
	return a, nil
}

// Suppressed implements lineage.Ledger.
func (l *Ledger) Suppressed(ctx context.Context, artifact string) (bool, error) {
	var n int
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT (SELECT count(*) FROM suppressions WHERE artifact = $1) + (SELECT count(*) FROM erasures WHERE artifact = $1)`, artifact).Scan(&n)
	})
	if err != nil {
		return false, fmt.Errorf("check suppression: %w", err)
	}
	return n > 0, nil
}

// Head implements lineage.Ledger.
func (l *Ledger) Head(ctx context.Context) (int64, string, error) {
	var seq int64
	var hash string
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&seq, &hash)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("ledger head: %w", err)
	}
	return seq, hash, nil
}

// Events implements lineage.EventLog.
func (l *Ledger) Events(ctx context.Context) ([]lineage.Event, error) {
	var out []lineage.Event
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, _ := c.Query(ctx, `SELECT seq, kind, body, hash FROM events ORDER BY seq`)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (lineage.Event, error) {
			var e lineage.Event
			return e, r.Scan(&e.Seq, &e.Kind, &e.Body, &e.Hash)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read ledger events: %w", err)
	}
	return out, nil
}

// lineage.View implements lineage.Ledger. It reads inside one REPEATABLE READ transaction,
// so the view is one snapshot even while other processes write.
func (l *Ledger) View(ctx context.Context, scope string, s subject.Key) (*lineage.View, error) {
	v := &lineage.View{Scope: scope, Subject: s, Artifacts: map[string]*lineage.Artifact{}, Children: map[string][]string{}, Erased: map[string]string{}, ErasedBy: map[string]string{}}
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
		return pgx.BeginTxFunc(ctx, c, opts, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`SELECT id FROM artifacts WHERE scope = $1 AND subject = $2 ORDER BY id COLLATE "C"`, scope, s.String()).Query(func(rows pgx.Rows) (err error) {
				v.Owned, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
			b.Queue(`SELECT m.artifact FROM mentions m JOIN artifacts a ON a.id = m.artifact WHERE a.scope = $1 AND m.subject = $2 ORDER BY m.artifact COLLATE "C"`, scope, s.String()).Query(func(rows pgx.Rows) (err error) {
				v.Mentions, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			return pgLoadLevels(ctx, tx, v)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return v, nil
}

// pgLoadLevels loads the owned and mentioning artifacts and all their
// descendants, one breadth-first level at a time: four statements a level
// (each = ANY of the level's ids; pgx prepares and caches them), sent in
// one round trip, instead of four statements per artifact.
func pgLoadLevels(ctx context.Context, tx pgx.Tx, v *lineage.View) error {
	frontier := lineage.NewFrontier(v, append(append([]string{}, v.Owned...), v.Mentions...))
	for len(frontier) > 0 {
		level := map[string]*lineage.Artifact{}
		children := map[string][]string{}
		b := &pgx.Batch{}
		b.Queue(`SELECT id, scope, subject, kind, store, key, digest FROM artifacts WHERE id = ANY($1)`, frontier).Query(func(rows pgx.Rows) error {
			arts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*lineage.Artifact, error) { return scanArtifact(r) })
			for _, a := range arts {
				level[a.ID] = a
			}
			return err
		})
		b.Queue(`SELECT child, parent FROM edges WHERE child = ANY($1)`, frontier).Query(func(rows pgx.Rows) error {
			return pgPairs(rows, level, func(child, parent string) { level[child].Parents = append(level[child].Parents, parent) })
		})
		b.Queue(`SELECT parent, child FROM edges WHERE parent = ANY($1)`, frontier).Query(func(rows pgx.Rows) error {
			return pgPairs(rows, level, func(parent, child string) { children[parent] = append(children[parent], child) })
		})
		b.Queue(`SELECT artifact, outcome, erasure FROM erasures WHERE artifact = ANY($1) ORDER BY artifact, seq DESC, erasure COLLATE "C" DESC`, frontier).Query(func(rows pgx.Rows) error {
			var id, outcome, erasure string
			_, err := pgx.ForEachRow(rows, []any{&id, &outcome, &erasure}, func() error {
				if _, ok := v.Erased[id]; !ok { // the latest: rows come seq DESC
					v.Erased[id] = strings.TrimSpace(outcome)
					v.ErasedBy[id] = strings.TrimSpace(erasure)
				}
				return nil
			})
			return err
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		var err error
		if frontier, err = lineage.AddLevel(v, frontier, level, children); err != nil {
			return err
		}
	}
	return nil
}

// pgPairs reads (id, other) rows, where id is of the level.
func pgPairs(rows pgx.Rows, level map[string]*lineage.Artifact, add func(id, other string)) error {
	var id, other string
	_, err := pgx.ForEachRow(rows, []any{&id, &other}, func() error {
		if _, ok := level[id]; !ok {
			return fmt.Errorf("edge of artifact %s, which is not recorded", id)
		}
		add(id, other)
		return nil
	})
	return err
}

// pgPool is a small pool of PostgreSQL connections: at most max open, idle
// ones reused, broken ones dropped. (pgxpool would need another module.)
type pgPool struct {
	cfg    *pgx.ConnConfig
	slots  chan struct{} // one per connection that may be in use
	mu     sync.Mutex
	idle   []*pgx.Conn
	closed bool
}

var errPoolClosed = errors.New("ledger is closed")

func newPgPool(cfg *pgx.ConnConfig, max int) *pgPool {
	return &pgPool{cfg: cfg, slots: make(chan struct{}, max)}
}

// with runs fn on a connection of its own.
func (p *pgPool) with(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer p.release(c)
	return fn(c)
}

func (p *pgPool) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, errPoolClosed
	}
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return c, nil
}

// release returns c to the pool, or closes it when it is broken, inside a
// transaction, or the pool is closed.
func (p *pgPool) release(c *pgx.Conn) {
	defer func() { <-p.slots }()
	healthy := !c.IsClosed() && !c.PgConn().IsBusy() && c.PgConn().TxStatus() == 'I'
	p.mu.Lock()
	if healthy && !p.closed {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	closeConn(c)
}

func (p *pgPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		closeConn(c)
	}
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Close(ctx)
}

type scanner interface{ Scan(...any) error }

// scanArtifact reads id, scope, subject, kind, store, key, digest.
func scanArtifact(r scanner) (*lineage.Artifact, error) {
	var a lineage.Artifact
	var subj, kind string
	if err := r.Scan(&a.ID, &a.Scope, &subj, &kind, &a.Store, &a.Key, &a.Digest); err != nil {
		return nil, err
	}
	k, err := subject.ParseKey(subj)
	if err != nil {
		return nil, err
	}
	a.Subject, a.Kind = k, lineage.Kind(kind)
	return &a, nil
}
