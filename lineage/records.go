package lineage

import (
	"context"
	"errors"
)

// Kinds of erasure record (ErasureRecords).
const (
	RecordSealed      = "sealed"      // an erasure's sealed evidence: AES-256-GCM ciphertext only
	RecordTrace       = "trace"       // a trace saved for a queued or resumed erasure
	RecordCertificate = "certificate" // a published certificate bundle
)

// ErrJournalConflict: a journal entry with that number is already written,
// by another writer (two writers of one journal) or by this one before.
var ErrJournalConflict = errors.New("journal entry already written")

// ErasureRecords is implemented by a ledger that keeps the durable state of
// erasures itself, so that several hosts share nothing but the ledger
// (lineage/pgledger): the erasures' journals, their sealed evidence, the
// traces saved for them and the certificates they publish. A ledger without
// it (SQLite) leaves them to files in the state directory.
//
// Writes of an erasure that a worker runs for a claimed job carry the claim
// (claim non-nil): they MUST be refused with ErrLeaseLost, in the same
// transaction as the write, unless that claim is the job's current one and
// its lease has not run out. A nil claim is a write outside the queue (an
// erasure run directly, a trace saved at enqueue), serialised by the
// subject's erasure lock instead.
//
// No record holds personal data in clear: a journal line holds counts,
// methods and digests, sealed evidence is ciphertext, traces and
// certificates hold keyed digests only.
type ErasureRecords interface {
	// AppendJournalLine writes line as entry seq (1 is the first) of
	// journal name of erasure; step and phase are the entry's, kept to
	// find unfinished erasures. An entry seq that is already written is
	// ErrJournalConflict, whoever wrote it: one journal has one writer. The
	// entry is durable when it returns.
	AppendJournalLine(ctx context.Context, claim *Job, erasure, name string, seq int, step, phase string, line []byte) error
	// JournalLines returns the lines of a journal in order (none when it
	// does not exist). The caller checks their hash chain.
	JournalLines(ctx context.Context, erasure, name string) ([][]byte, error)
	// JournalErasures returns, sorted, the erasures that have a journal
	// named name, leaving out those whose journal has a done entry of step
	// unless step is "".
	JournalErasures(ctx context.Context, name, unfinishedStep string) ([]string, error)
	// PutErasureRecord writes (or replaces) the record of kind and id.
	PutErasureRecord(ctx context.Context, claim *Job, kind, id string, b []byte) error
	// ErasureRecord returns the record of kind and id, or an error wrapping
	// ErrNotFound.
	ErasureRecord(ctx context.Context, kind, id string) ([]byte, error)
	// ErasureRecordIDs returns the ids of every record of kind, sorted.
	ErasureRecordIDs(ctx context.Context, kind string) ([]string, error)
	// ShredErasureRecords deletes the records of kind and ids (none there is not
	// an error) and makes the database reclaim their bytes from its table
	// files. It returns how, in one line for a certificate or a log.
	ShredErasureRecords(ctx context.Context, claim *Job, kind string, ids []string) (string, error)
}
