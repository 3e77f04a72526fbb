package saga

import (
	"context"
	"errors"
	"fmt"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/shred"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

// shredResult is the journaled outcome of the "shred" step: whether the
// subject had a data key, whether this erasure destroyed it, and what was
// measured afterwards. Never the key.
type shredResult struct {
	HadKey    bool   `json:"had_key"`
	Destroyed bool   `json:"destroyed"`
	Level     string `json:"level,omitempty"`
	Evidence  string `json:"evidence,omitempty"`
}

// shredKey destroys the subject's data key (crypto-shredding) when the
// ledger keeps one, and measures that it is gone: logically (the ledger
// answers that it was destroyed) and, on a SQLite ledger, physically (no
// byte of the wrapped key in the ledger's files).
func (r *runner) shredKey(ctx context.Context) (shredResult, error) {
	kk, ok := r.Ledger.(lineage.KeyKeeper)
	if !ok {
		return shredResult{}, nil
	}
	s, err := subject.ParseKey(r.Trace.Subject)
	if err != nil {
		return shredResult{}, fmt.Errorf("shred: the trace's subject: %w", err)
	}
	wrapped, err := kk.DataKey(ctx, r.Trace.Scope, s)
	switch {
	case errors.Is(err, shred.ErrNoKey):
		return shredResult{}, nil
	case errors.Is(err, shred.ErrDestroyed):
		// Destroyed by an earlier erasure, or by this one before a crash
		// (the step is redone): gone, but its bytes can no longer be
		// looked for.
		return shredResult{HadKey: true, Destroyed: true, Level: certificate.LevelLogical,
			Evidence: "the ledger records the key as destroyed (before this step ran: its bytes were not available to search for)"}, nil
	case err != nil:
		return shredResult{}, err
	}
	defer clear(wrapped)
	// The physical level needs power: the same scan must find the wrapped
	// key's windows in the ledger's files before the destruction (it stops
	// once it has found them: scanKey), and none after it (every byte).
	spec := r.Dir.LedgerSpec()
	pg := lineage.IsPostgresDSN(spec)
	files := []string{spec, spec + "-wal", spec + "-shm", spec + "-journal"}
	windows := len(keyNeedles(wrapped))
	var before store.ScanReport
	var beforeErr error
	if !pg {
		before, beforeErr = scanKey(ctx, files, wrapped, "before the key's destruction", true)
	}
	if _, err := kk.DestroyDataKey(ctx, r.Trace.Scope, s, r.id); err != nil {
		return shredResult{}, fmt.Errorf("destroy the data key: %w", err)
	}
	if _, err := kk.DataKey(ctx, r.Trace.Scope, s); !errors.Is(err, shred.ErrDestroyed) {
		return shredResult{}, fmt.Errorf("the data key is not destroyed after DestroyDataKey (%v)", err)
	}
	res := shredResult{HadKey: true, Destroyed: true, Level: certificate.LevelLogical,
		Evidence: "the ledger no longer returns the wrapped key and records it as destroyed"}
	switch {
	case pg:
		res.Evidence += "; PostgreSQL ledger: the row was deleted and data_keys rewritten (VACUUM FULL), but pg_wal keeps the insert until the server recycles it, and its files are not read: physical level not claimed"
		return res, nil
	case beforeErr != nil:
		res.Evidence += "; the ledger's files could not be scanned before the destruction (" + beforeErr.Error() + "): physical level not claimed"
		return res, nil
	case before.NeedlesFound == 0:
		res.Evidence += fmt.Sprintf("; a byte scan of the ledger's files before the destruction found none of the wrapped key's %d byte windows (%d files, %d bytes scanned), so a scan after it could not show the key gone: physical level not claimed", windows, before.Files, before.Bytes)
		return res, nil
	}
	rep, err := scanKey(ctx, files, wrapped, "after the key's destruction", false)
	if err != nil {
		res.Evidence += "; the ledger's files could not be scanned: " + err.Error()
		return res, nil
	}
	if rep.NeedlesFound > 0 {
		res.Evidence += fmt.Sprintf("; %d of the wrapped key's byte windows are still in the ledger's files (a reader held the WAL, or free pages kept it): physical level not claimed", rep.NeedlesFound)
		return res, nil
	}
	res.Level = certificate.LevelPhysical
	res.Evidence += fmt.Sprintf("; %d of the wrapped key's %d byte windows were in the ledger's files before the destruction, none after (%d files, %d bytes scanned)", before.NeedlesFound, windows, rep.Files, rep.Bytes)
	return res, nil
}

// scanKey scans files (the ledger's) for the wrapped key's windows
// (keyNeedles). The scan before the key's destruction (stop) only shows the
// scan's power: it stops once it has found every window
// (store.Scanner.StopWhenAllFound; they are all in one copy of the key),
// without reading the rest of the files; when some are missing it reads
// every byte, and its count is that of a whole scan either way. The scan
// after the destruction (not stop) reads every byte of every file: it must
// show the key gone.
func scanKey(ctx context.Context, files []string, wrapped []byte, when string, stop bool) (store.ScanReport, error) {
	ev := map[string]*store.Evidence{"datakey": {Key: "datakey", Needles: keyNeedles(wrapped)}}
	sc := store.NewScanner(store.NewNeedleSet(ev), "byte scan of the ledger's files "+when)
	if stop {
		sc.StopWhenAllFound()
	}
	for _, f := range files {
		if err := sc.ScanFile(ctx, f); err != nil {
			return store.ScanReport{}, err
		}
	}
	return sc.Report(), nil
}

// keyNeedles are the wrapped key and its overlapping 16-byte windows, so
// that a partly overwritten copy is found too.
func keyNeedles(w []byte) [][]byte {
	out := [][]byte{append([]byte(nil), w...)}
	for i := 0; i+16 <= len(w); i += 8 {
		out = append(out, append([]byte(nil), w[i:i+16]...))
	}
	return out
}

// shredding is the certificate's crypto_shredding section, or nil when the
// subject had no data key.
func (r *runner) shredding(ctx context.Context, res shredResult, arts []certificate.Artifact) (*certificate.Shredding, error) {
	if !res.HadKey {
		return nil, nil
	}
	sh := &certificate.Shredding{KeyDestroyed: res.Destroyed, Level: res.Level, Evidence: res.Evidence,
		Covers:       "every copy of the content fields written sealed through capture (documents' text, vectors' content), in the configured stores and in any backup, replica or export of them: ciphertext under a destroyed key",
		DoesNotCover: "embeddings and metadata (not encrypted); content written without sealing; plaintext kept elsewhere or in a running process's memory; a copy of the key store from before this erasure together with the master key that unwraps it",
	}
	kk := r.Ledger.(lineage.KeyKeeper)
	ids := make([]string, len(arts))
	for i, a := range arts {
		ids[i] = a.ID
	}
	sealed, err := kk.Sealed(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read sealed marks: %w", err)
	}
	sh.SealedArtifacts = len(sealed)
	for i := range arts {
		if sealed[arts[i].ID] {
			arts[i].Sealed = true
		}
	}
	return sh, nil
}
