package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
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
	v, err := note.NewVerifier(key)
	if err != nil {
		return nil, fmt.Errorf("witness key: %v", err)
	}
	return v, nil
}

// timestampChecker returns the RFC 3161 check of verify --tsa-root.
func timestampChecker(roots []string) (func(token, message []byte) (time.Time, error), error) {
	return nil, fmt.Errorf("--tsa-root: timestamp verification is not built yet")
}
