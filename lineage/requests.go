package lineage

import (
	"context"
	"errors"
)

// Request store errors.
var (
	// ErrRequestExists: a request with this id is already stored.
	ErrRequestExists = errors.New("an erasure request with this id exists")
	// ErrRequestChanged: the request was updated by someone else since it
	// was read (its version moved on); read it again.
	ErrRequestChanged = errors.New("the erasure request changed since it was read")
)

// RequestRow is one erasure request of `amnesia serve` as the ledger keeps
// it: a few columns to select on and the request itself as JSON (Body),
// which the service writes and reads. The body never holds a raw subject
// id: the service keeps the keyed subject only.
type RequestRow struct {
	ID      string
	Scope   string
	State   string
	TraceID string
	Version int64 // incremented by every update: compare-and-set
	Body    []byte
}

// RequestStore is implemented by ledgers that keep the erasure requests of
// `amnesia serve` (both backends do), so that several serve processes on one
// PostgreSQL ledger share them. Requests are operational state, updated in
// place, like the queue; they are not part of the hash-chained events.
type RequestStore interface {
	// InsertRequest stores a new request at version 1; ErrRequestExists
	// when its id is taken.
	InsertRequest(ctx context.Context, r RequestRow) error
	// GetRequest returns a request; ErrNotFound when there is none.
	GetRequest(ctx context.Context, id string) (*RequestRow, error)
	// UpdateRequest replaces the request whose stored version is r.Version
	// and stores it at r.Version+1; ErrRequestChanged when the stored
	// version is another (or the request is gone).
	UpdateRequest(ctx context.Context, r RequestRow) error
	// ListRequests returns every request in the order they were created.
	ListRequests(ctx context.Context) ([]RequestRow, error)
}

// CheckRequestRow checks the fields every backend needs.
func CheckRequestRow(r RequestRow) error {
	if r.ID == "" || r.State == "" || len(r.Body) == 0 {
		return errors.New("erasure request: an id, a state and a body are required")
	}
	return nil
}
