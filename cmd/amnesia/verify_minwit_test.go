package main

import (
	"crypto/ed25519"
	"testing"

	"github.com/amnesia-dev/amnesia/transparency"
)

// --witnesses below zero is a usage error: it must not turn a required
// cosignature count into none.
func TestVerifyNegativeWitnesses(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	vkey, err := transparency.CosignatureVerifierKey("witness.example/w1", pub)
	if err != nil {
		t.Fatal(err)
	}
	o := &verifyOptions{witnesses: []string{vkey}, minWit: -1}
	opts, err := o.options()
	if err == nil || exitCode(err) != exitUsage {
		t.Fatalf("--witnesses -1: err %v (exit %d), MinWitnesses %d; want a usage error", err, exitCode(err), opts.MinWitnesses)
	}
}
