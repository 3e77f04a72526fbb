package sqliteledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// sqliteConsentSchema: erased_subjects is the keyed marker of erased
// subjects (MarkErased fills it); consents the new consents recorded after
// an erasure. Subjects are keyed digests, never raw ids.
const sqliteConsentSchema = `
CREATE TABLE IF NOT EXISTS erased_subjects (
	scope   TEXT NOT NULL,
	subject TEXT NOT NULL,
	erasure TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	PRIMARY KEY (scope, subject, erasure)
);
CREATE TABLE IF NOT EXISTS consents (
	seq     INTEGER PRIMARY KEY,
	scope   TEXT NOT NULL,
	subject TEXT NOT NULL,
	at      TEXT NOT NULL,
	by      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS consents_subject ON consents (scope, subject);
`

// initConsent creates the tables; when erased_subjects is new in a ledger
// that already holds erasures, it is filled from them once.
func initConsent(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'erased_subjects'`).Scan(&n); err != nil {
		return err
	}
	if n == 1 {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, sqliteConsentSchema); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO erased_subjects (scope, subject, erasure, seq)
		SELECT a.scope, a.subject, e.erasure, MAX(e.seq) FROM erasures e JOIN artifacts a ON a.id = e.artifact GROUP BY a.scope, a.subject, e.erasure`); err != nil {
		return err
	}
	return tx.Commit()
}

var _ lineage.SubjectGuard = (*Ledger)(nil)

// SubjectState implements lineage.SubjectGuard.
func (l *Ledger) SubjectState(ctx context.Context, scope string, s subject.Key) (lineage.SubjectState, error) {
	var st lineage.SubjectState
	var seq sql.NullInt64
	var erasure, queued sql.NullString
	err := l.st.subjectState.QueryRowContext(ctx, scope, s.String()).Scan(&seq, &erasure, &queued)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("read subject state: %w", err)
	}
	st.ErasedSeq, st.Erasure, st.Queued = seq.Int64, erasure.String, queued.String
	if st.ErasedSeq == 0 {
		return st, nil // never erased: capture's common case, one indexed read
	}
	cs, err := l.consents(ctx, `SELECT seq, scope, subject, at, by FROM consents WHERE scope = ? AND subject = ? ORDER BY seq DESC LIMIT 1`, scope, s.String())
	if err != nil {
		return st, err
	}
	if len(cs) == 1 {
		st.Consent = &cs[0]
	}
	return st, nil
}

// Consents implements lineage.SubjectGuard.
func (l *Ledger) Consents(ctx context.Context, scope string, s subject.Key) ([]lineage.Consent, error) {
	return l.consents(ctx, `SELECT seq, scope, subject, at, by FROM consents WHERE scope = ? AND subject = ? ORDER BY seq`, scope, s.String())
}

func (l *Ledger) consents(ctx context.Context, q string, args ...any) ([]lineage.Consent, error) {
	rows, err := l.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read consents: %w", err)
	}
	defer rows.Close()
	var out []lineage.Consent
	for rows.Next() {
		var c lineage.Consent
		var subj, at string
		if err := rows.Scan(&c.Seq, &c.Scope, &subj, &at, &c.By); err != nil {
			return nil, fmt.Errorf("read consents: %w", err)
		}
		if c.Subject, err = subject.ParseKey(subj); err != nil {
			return nil, fmt.Errorf("read consents: %w", err)
		}
		if c.At, err = time.Parse(time.RFC3339, at); err != nil {
			return nil, fmt.Errorf("read consents: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// RecordConsent implements lineage.SubjectGuard.
func (l *Ledger) RecordConsent(ctx context.Context, c lineage.Consent) (lineage.Consent, error) {
	if err := lineage.CheckConsent(c); err != nil {
		return c, err
	}
	body := lineage.ConsentBody(c)
	err := l.inTx(ctx, "record consent", func(tx *sql.Tx) error {
		seq, err := appendEvent(ctx, tx, "consent", body)
		if err != nil {
			return err
		}
		c.Seq = seq
		_, err = tx.ExecContext(ctx, `INSERT INTO consents (seq, scope, subject, at, by) VALUES (?, ?, ?, ?, ?)`, seq, body.Scope, body.Subject, body.At, body.By)
		return err
	})
	c.At, _ = time.Parse(time.RFC3339, body.At)
	return c, err
}
