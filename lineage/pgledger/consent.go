package pgledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// pgConsentSchema: erased_subjects is the keyed marker of erased subjects
// (MarkErased fills it); consents the new consents recorded after an
// erasure. Subjects are keyed digests, never raw ids. Created on every open
// (IF NOT EXISTS) under the ledger's write lock.
const pgConsentSchema = `
CREATE TABLE IF NOT EXISTS erased_subjects (
	scope TEXT NOT NULL, subject TEXT NOT NULL, erasure TEXT NOT NULL, seq BIGINT NOT NULL,
	PRIMARY KEY (scope, subject, erasure)
);
CREATE TABLE IF NOT EXISTS consents (
	seq BIGINT PRIMARY KEY, scope TEXT NOT NULL, subject TEXT NOT NULL, at TEXT NOT NULL, by_name TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS consents_subject ON consents (scope, subject);
`

const markErasedSubjects = `INSERT INTO erased_subjects (scope, subject, erasure, seq) SELECT scope, subject, $1, $2 FROM artifacts WHERE id = $3 ON CONFLICT DO NOTHING`

// initConsent creates the tables (tx holds the write lock); when
// erased_subjects is new in a ledger that holds erasures, it is filled from
// them once.
func initConsent(ctx context.Context, tx pgx.Tx) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('erased_subjects') IS NOT NULL`).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	if _, err := tx.Exec(ctx, pgConsentSchema); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO erased_subjects (scope, subject, erasure, seq)
		SELECT a.scope, a.subject, e.erasure, MAX(e.seq) FROM erasures e JOIN artifacts a ON a.id = e.artifact GROUP BY a.scope, a.subject, e.erasure
		ON CONFLICT DO NOTHING`)
	return err
}

var _ lineage.SubjectGuard = (*Ledger)(nil)

// SubjectState implements lineage.SubjectGuard.
func (l *Ledger) SubjectState(ctx context.Context, scope string, s subject.Key) (lineage.SubjectState, error) {
	var st lineage.SubjectState
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		// One row: the latest erasure mark (none: NULL) and a queued
		// erasure of the subject (through queue_subject_open).
		var seq *int64
		var erasure, queued *string
		err := c.QueryRow(ctx, `SELECT e.seq, e.erasure, (SELECT id FROM queue WHERE subject = $2 AND scope = $1 AND state IN ('pending', 'claimed') LIMIT 1)
			FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT seq, erasure FROM erased_subjects WHERE scope = $1 AND subject = $2 ORDER BY seq DESC LIMIT 1) e ON true`, scope, s.String()).Scan(&seq, &erasure, &queued)
		if err != nil {
			return err
		}
		if seq != nil {
			st.ErasedSeq = *seq
		}
		if erasure != nil {
			st.Erasure = *erasure
		}
		if queued != nil {
			st.Queued = *queued
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("read subject state: %w", err)
	}
	if st.ErasedSeq == 0 {
		return st, nil // never erased: capture's common case, one indexed read
	}
	cs, err := l.consents(ctx, `SELECT seq, scope, subject, at, by_name FROM consents WHERE scope = $1 AND subject = $2 ORDER BY seq DESC LIMIT 1`, scope, s.String())
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
	return l.consents(ctx, `SELECT seq, scope, subject, at, by_name FROM consents WHERE scope = $1 AND subject = $2 ORDER BY seq`, scope, s.String())
}

func (l *Ledger) consents(ctx context.Context, q string, args ...any) ([]lineage.Consent, error) {
	var out []lineage.Consent
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, _ := c.Query(ctx, q, args...)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (lineage.Consent, error) {
			var c lineage.Consent
			var subj, at string
			if err := r.Scan(&c.Seq, &c.Scope, &subj, &at, &c.By); err != nil {
				return c, err
			}
			var err error
			if c.Subject, err = subject.ParseKey(subj); err != nil {
				return c, err
			}
			c.At, err = time.Parse(time.RFC3339, at)
			return c, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read consents: %w", err)
	}
	return out, nil
}

// RecordConsent implements lineage.SubjectGuard.
func (l *Ledger) RecordConsent(ctx context.Context, c lineage.Consent) (lineage.Consent, error) {
	if err := lineage.CheckConsent(c); err != nil {
		return c, err
	}
	body := lineage.ConsentBody(c)
	err := l.inTx(ctx, "record consent", true, func(tx pgx.Tx) error {
		seq, err := pgAppend(ctx, tx, "consent", body)
		if err != nil {
			return err
		}
		c.Seq = seq
		_, err = tx.Exec(ctx, `INSERT INTO consents (seq, scope, subject, at, by_name) VALUES ($1, $2, $3, $4, $5)`, seq, body.Scope, body.Subject, body.At, body.By)
		return err
	})
	c.At, _ = time.Parse(time.RFC3339, body.At)
	return c, err
}
