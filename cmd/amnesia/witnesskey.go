package main

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/timestamp"

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

// timestampChecker returns the RFC 3161 check of verify --tsa-root: the
// token's signature, its imprint of the message and its chain to one of the
// given root certificates.
func timestampChecker(roots []string) (func(token, message []byte) (time.Time, error), error) {
	if len(roots) == 0 {
		// No TSA is trusted: the token's own signature and its imprint of
		// the checkpoint are still checked, so a damaged token fails.
		return func(token, message []byte) (time.Time, error) {
			info, err := timestamp.ParseToken(token)
			if err != nil {
				return time.Time{}, err
			}
			h := info.HashAlgorithm.New()
			h.Write(message)
			if !bytes.Equal(h.Sum(nil), info.HashedMessage) {
				return time.Time{}, fmt.Errorf("the token's message imprint is not the checkpoint's: %w", timestamp.ErrImprint)
			}
			return info.GenTime, nil
		}, nil
	}
	pool := x509.NewCertPool()
	for _, path := range roots {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--tsa-root: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, withCode(exitUsage, fmt.Errorf("--tsa-root %s: no PEM certificate", path))
		}
	}
	return func(token, message []byte) (time.Time, error) {
		info, err := timestamp.Verify(token, message, pool, nil)
		if err != nil {
			return time.Time{}, err
		}
		return info.GenTime, nil
	}, nil
}
