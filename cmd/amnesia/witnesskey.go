package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/transparency"
)

// parseWitnessKey reads a witness verifier key given inline or as a file.
func parseWitnessKey(s string) (note.Verifier, error) {
	key := s
	if !strings.Contains(s, "+") {
		b, err := os.ReadFile(s)
		if err != nil {
			return nil, fmt.Errorf("witness key %s: %w", s, err)
		}
		key = strings.TrimSpace(string(b))
	}
	// cosignature/v1 keys (algorithm 0x04) and plain Ed25519 note keys.
	v, err := transparency.NewWitnessVerifier(key)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// timestampChecker returns the RFC 3161 check of verify --tsa-root.
func timestampChecker(roots []string) (func(token, message []byte) (time.Time, error), error) {
	return nil, fmt.Errorf("--tsa-root: timestamp verification is not built yet")
}
