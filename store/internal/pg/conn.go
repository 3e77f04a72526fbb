package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/amnesia-dev/amnesia/store"
)

// DB is one connection, used by one goroutine at a time. A store holds
// exactly one: PGlite serves a single connection, and reclaim statements
// must run in order on one session anyway. A connection broken by a
// cancelled context is replaced on next use.
type DB struct {
	cfg  *pgx.ConnConfig
	mu   sync.Mutex
	conn *pgx.Conn
}

// Connect opens a connection to dsn. Errors wrap store.ErrUnavailable and
// never include the DSN (it may hold a password).
func Connect(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("connect: %w: invalid dsn", store.ErrUnavailable)
	}
	d := &DB{cfg: cfg}
	if err := d.ensure(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *DB) ensure(ctx context.Context) error {
	if d.conn != nil && !d.conn.IsClosed() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var c *pgx.Conn
	var err error
	for wait := time.Duration(0); ; wait += connectRetry {
		c, err = pgx.ConnectConfig(ctx, d.cfg.Copy())
		if err == nil || !transient(err) || wait >= connectPatience {
			break
		}
		if serr := sleep(ctx, connectRetry); serr != nil {
			return serr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("connect to %s:%d: %w: %v", d.cfg.Host, d.cfg.Port, store.ErrUnavailable, connectCause(err))
	}
	d.conn = c
	return nil
}

// A server at its connection limit refuses for a moment: PostgreSQL with
// 53300 too_many_connections, PGlite (one connection at a time) by closing
// the socket while the previous client's close is still being processed.
const (
	connectRetry    = 100 * time.Millisecond
	connectPatience = 5 * time.Second
)

func transient(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "53300"
	}
	// The server closed or reset the socket (a busy server, PGlite's
	// one-connection handover): pgconn wraps the network error.
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || pgconn.SafeToRetry(err)
}

// connectCause strips what a connect error may quote from the DSN.
func connectCause(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + " " + pe.Message
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// With runs fn on the connection, holding it for fn's duration.
func (d *DB) With(ctx context.Context, fn func(c *pgx.Conn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ensure(ctx); err != nil {
		return err
	}
	err := fn(d.conn)
	if ctx.Err() != nil && err != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// SendTx runs the statements queued in b in one transaction and one round
// trip: BEGIN and COMMIT travel in the batch with them. On an error the
// transaction is rolled back, or, when that fails too, the connection is
// closed (With opens another at its next use): nothing of b is committed.
func (d *DB) SendTx(ctx context.Context, b *pgx.Batch) error {
	tx := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+2)}
	tx.Queue("BEGIN")
	tx.QueuedQueries = append(tx.QueuedQueries, b.QueuedQueries...)
	tx.Queue("COMMIT")
	return d.With(ctx, func(c *pgx.Conn) error {
		err := c.SendBatch(ctx, tx).Close()
		if err != nil && !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
			if _, rerr := c.Exec(ctx, "ROLLBACK"); rerr != nil {
				c.Close(context.WithoutCancel(ctx))
			}
		}
		return err
	})
}

// Exec runs one statement. Without arguments it uses the simple protocol.
func (d *DB) Exec(ctx context.Context, sql string, args ...any) error {
	return d.With(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, sql, args...)
		return err
	})
}

// User returns the role the connection was configured with.
func (d *DB) User() string { return d.cfg.User }

const closeTimeout = 5 * time.Second

// Close closes the connection.
func (d *DB) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err := d.conn.Close(ctx)
	d.conn = nil
	return err
}

// Table is a possibly schema-qualified table name.
type Table struct {
	Schema, Name string
}

// ParseTable parses "name" or "schema.name" (either part may be
// double-quoted).
func ParseTable(s string) (Table, error) {
	parts, err := splitIdent(s)
	if err != nil {
		return Table{}, fmt.Errorf("table %q: %w", s, err)
	}
	switch len(parts) {
	case 1:
		return Table{Name: parts[0]}, nil
	case 2:
		return Table{Schema: parts[0], Name: parts[1]}, nil
	}
	return Table{}, fmt.Errorf("table %q: want name or schema.name", s)
}

func splitIdent(s string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	quoted, inQuote, seen := false, false, false
	flush := func() error {
		if !seen {
			return errors.New("empty identifier")
		}
		p := cur.String()
		if !quoted {
			p = strings.ToLower(p)
		}
		parts = append(parts, p)
		cur.Reset()
		quoted, seen = false, false
		return nil
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case inQuote && ch == '"' && i+1 < len(s) && s[i+1] == '"':
			cur.WriteByte('"')
			i++
		case inQuote && ch == '"':
			inQuote = false
		case inQuote:
			cur.WriteByte(ch)
		case ch == '"' && !seen:
			inQuote, quoted, seen = true, true, true
		case ch == '.':
			if err := flush(); err != nil {
				return nil, err
			}
		case ch == '"' || quoted:
			return nil, errors.New("bad identifier syntax")
		default:
			cur.WriteByte(ch)
			seen = true
		}
	}
	if inQuote {
		return nil, errors.New("unterminated quoted identifier")
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return parts, nil
}

// Ident returns the quoted name for SQL text.
func (t Table) Ident() string {
	if t.Schema == "" {
		return pgx.Identifier{t.Name}.Sanitize()
	}
	return pgx.Identifier{t.Schema, t.Name}.Sanitize()
}

// String is the name as Display writes it, for messages.
func (t Table) String() string {
	if t.Schema == "" {
		return Display(t.Name)
	}
	return Display(t.Schema) + "." + Display(t.Name)
}

// Quote quotes one identifier for SQL text.
func Quote(name string) string { return pgx.Identifier{name}.Sanitize() }

// Display is name as a person would type it in SQL: bare when it is a plain
// lower-case identifier, quoted otherwise. For messages; SQL text uses Quote.
func Display(name string) string {
	if name == "" || reserved[name] {
		return Quote(name)
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && (r >= '0' && r <= '9' || r == '$')) {
			return Quote(name)
		}
	}
	return name
}

// reserved holds the SQL key words most likely to be used as names.
var reserved = map[string]bool{"all": true, "analyse": true, "analyze": true, "asc": true, "check": true, "column": true,
	"current_user": true, "default": true, "desc": true, "do": true, "end": true, "from": true, "grant": true, "group": true,
	"limit": true, "offset": true, "order": true, "primary": true, "references": true, "select": true, "session_user": true,
	"table": true, "to": true, "user": true, "where": true, "window": true, "with": true}

// Location names where a configured store is, for people: host:port/database
// of its DSN and its table, never the user or password.
func Location(c store.Config) string {
	cfg, err := pgx.ParseConfig(c.DSN)
	if err != nil {
		return "(invalid dsn)"
	}
	t := cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database
	if c.Table != "" {
		t += fmt.Sprintf(" table %s", c.Table)
	}
	return t
}
