package pgledger

// Reads of the PostgreSQL ledger (Lookup, Suppressed, Head, Events, lineage.View) and
// its connection pool.

import (
	"context"
	"errors"
	"fmt"
	"sort"
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

// The set-based reads of a view (pgx prepares each once per connection and
// reuses it). The subject's own and mentioning artifacts come whole from
// the subject's index, and the parents, children and erasure marks of
// both in the same round trip (viewFirstLinks); each later breadth-first
// level costs one round trip of at most two statements, each taking the
// level's ids as one array.
const (
	// viewOwned reads neither scope nor subject: they are its arguments
	// (collectOwned fills them in).
	viewOwned    = `SELECT id, kind, store, key, digest FROM artifacts WHERE scope = $1 AND subject = $2`
	viewMentions = `SELECT a.id, a.scope, a.subject, a.kind, a.store, a.key, a.digest FROM mentions m JOIN artifacts a ON a.id = m.artifact WHERE a.scope = $1 AND m.subject = $2`
	// viewLinks reads the parents (0), children (1) and erasure marks (2)
	// of the artifacts in f.
	viewLinks = `SELECT 0, e.child, e.parent, '', 0::bigint FROM f JOIN edges e ON e.child = f.id
UNION ALL SELECT 1, e.parent, e.child, '', 0::bigint FROM f JOIN edges e ON e.parent = f.id
UNION ALL SELECT 2, m.artifact, m.outcome, m.erasure, m.seq FROM f JOIN erasures m ON m.artifact = f.id`
	viewFirstLinks = `WITH f AS (SELECT id FROM artifacts WHERE scope = $1 AND subject = $2
UNION SELECT m.artifact FROM mentions m JOIN artifacts a ON a.id = m.artifact WHERE a.scope = $1 AND m.subject = $2)
` + viewLinks
	viewLevelLinks = `WITH f AS (SELECT unnest($1::text[]) AS id)
` + viewLinks
	viewArtifacts = `SELECT id, scope, subject, kind, store, key, digest FROM artifacts WHERE id = ANY($1)`
)

// link is one row of viewLinks.
type link struct {
	what               int
	id, other, erasure string
	seq                int64
}

// lineage.View implements lineage.Ledger. It reads inside one REPEATABLE
// READ transaction, so the view is one snapshot even while other
// processes write. The transaction begins in the first level's round trip
// (BEGIN is the batch's first statement, not a round trip of its own), so
// a view of one level costs two round trips, the second the COMMIT.
func (l *Ledger) View(ctx context.Context, scope string, s subject.Key) (*lineage.View, error) {
	v := &lineage.View{Scope: scope, Subject: s, Artifacts: map[string]*lineage.Artifact{}, Children: map[string][]string{}, Erased: map[string]string{}, ErasedBy: map[string]string{}}
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		err := viewOn(ctx, c, v, scope, s)
		if err == nil {
			_, err = c.Exec(ctx, "COMMIT")
		} else if !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
			c.Exec(ctx, "ROLLBACK") // else the pool closes the connection
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return v, nil
}

// viewOn begins the view's transaction on c and reads v in it.
func viewOn(ctx context.Context, c *pgx.Conn, v *lineage.View, scope string, s subject.Key) error {
	known := map[string]*lineage.Artifact{} // read whole already
	var links []link
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	// The head first: the snapshot is taken by the transaction's first
	// statement, and every read below sees the same one.
	b.Queue(`SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&v.HeadSeq, &v.HeadHash)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	b.Queue(viewOwned, scope, s.String()).Query(func(rows pgx.Rows) (err error) {
		v.Owned, err = collectOwned(rows, known, scope, s)
		return err
	})
	b.Queue(viewMentions, scope, s.String()).Query(func(rows pgx.Rows) (err error) {
		v.Mentions, err = collectArtifacts(rows, known)
		return err
	})
	b.Queue(viewFirstLinks, scope, s.String()).Query(func(rows pgx.Rows) (err error) {
		links, err = collectLinks(rows)
		return err
	})
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if st := c.PgConn().TxStatus(); st != 'T' {
		return fmt.Errorf("view transaction not open (status %q)", st)
	}
	return pgLoadLevels(ctx, c, v, known, links)
}

// collectArtifacts reads whole artifacts into known and returns their ids
// sorted (byte order, as ORDER BY id COLLATE "C").
func collectArtifacts(rows pgx.Rows, known map[string]*lineage.Artifact) ([]string, error) {
	arts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*lineage.Artifact, error) { return scanArtifact(r) })
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, a := range arts {
		known[a.ID] = a
		ids = append(ids, a.ID)
	}
	sort.Strings(ids)
	return ids, nil
}

// collectOwned reads viewOwned's rows (the artifacts of subject s in
// scope) into known and returns their ids sorted (byte order).
func collectOwned(rows pgx.Rows, known map[string]*lineage.Artifact, scope string, s subject.Key) ([]string, error) {
	var ids []string
	var id, kind, store, key, digest string
	_, err := pgx.ForEachRow(rows, []any{&id, &kind, &store, &key, &digest}, func() error {
		known[id] = &lineage.Artifact{ID: id, Scope: scope, Subject: s, Kind: lineage.Kind(kind), Store: store, Key: key, Digest: digest}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(ids)
	return ids, nil
}

func collectLinks(rows pgx.Rows) ([]link, error) {
	var out []link
	var k link
	_, err := pgx.ForEachRow(rows, []any{&k.what, &k.id, &k.other, &k.erasure, &k.seq}, func() error {
		out = append(out, k)
		return nil
	})
	return out, err
}

// pgLoadLevels loads the owned and mentioning artifacts and all their
// descendants, one breadth-first level at a time. known holds the
// artifacts read already, links the links of the first level.
func pgLoadLevels(ctx context.Context, tx batchSender, v *lineage.View, known map[string]*lineage.Artifact, links []link) error {
	frontier := lineage.NewFrontier(v, append(append([]string{}, v.Owned...), v.Mentions...))
	for first := true; len(frontier) > 0; first = false {
		level, missing := lineage.SplitKnown(frontier, known)
		if !first || len(missing) > 0 {
			b := &pgx.Batch{}
			if len(missing) > 0 {
				b.Queue(viewArtifacts, missing).Query(func(rows pgx.Rows) error {
					_, err := collectArtifacts(rows, level)
					return err
				})
			}
			if !first {
				b.Queue(viewLevelLinks, frontier).Query(func(rows pgx.Rows) (err error) {
					links, err = collectLinks(rows)
					return err
				})
			}
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
		}
		children, err := applyLinks(v, level, links)
		if err != nil {
			return err
		}
		if frontier, err = lineage.AddLevel(v, frontier, level, children); err != nil {
			return err
		}
	}
	return nil
}

// applyLinks adds a level's parents to its artifacts and the latest
// erasure mark of each to v, and returns each artifact's children.
func applyLinks(v *lineage.View, level map[string]*lineage.Artifact, links []link) (map[string][]string, error) {
	children := map[string][]string{}
	latest := map[string]link{}
	for _, k := range links {
		switch k.what {
		case 0, 1:
			a, ok := level[k.id]
			if !ok {
				return nil, fmt.Errorf("edge of artifact %s, which is not recorded", k.id)
			}
			if k.what == 0 {
				a.Parents = append(a.Parents, k.other)
			} else {
				children[k.id] = append(children[k.id], k.other)
			}
		case 2:
			// The latest mark: the highest seq, then the highest erasure
			// id in byte order (as ORDER BY seq DESC, erasure COLLATE "C" DESC).
			if m, ok := latest[k.id]; !ok || k.seq > m.seq || (k.seq == m.seq && k.erasure > m.erasure) {
				latest[k.id] = k
			}
		}
	}
	for id, m := range latest {
		v.Erased[id] = strings.TrimSpace(m.other)
		v.ErasedBy[id] = strings.TrimSpace(m.erasure)
	}
	return children, nil
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
	// A custom plan for every run of a statement, unless the URL sets
	// plan_cache_mode: pgx prepares each statement once per connection,
	// and PostgreSQL switches a prepared statement to a generic plan after
	// five runs; a generic plan chosen while the ledger's tables were
	// small (a sequential scan for id = ANY($1)) would stay for the life of
	// the connection while they grow. Set after connecting, not as a
	// startup parameter (PgBouncer refuses unknown ones); a server that
	// does not know it (before PostgreSQL 12) keeps its default.
	if _, set := p.cfg.RuntimeParams["plan_cache_mode"]; !set {
		c.Exec(ctx, "SET plan_cache_mode = force_custom_plan")
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
