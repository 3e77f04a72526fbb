//go:build amnesia_testhooks

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// testBarrier is a test hook: with AMNESIA_TEST_WORKER_BARRIER=<dir>:<n>, a
// worker that has claimed its first erasure marks <dir> and waits (at most
// 30s) until n workers have, so that a test can show several workers sharing
// the work without relying on timing. Only a binary built with the tag
// amnesia_testhooks has it (the tests of this package build one); a release
// build has the no-op of testhooks_off.go.
func testBarrier(worker string) {
	v := os.Getenv("AMNESIA_TEST_WORKER_BARRIER")
	i := strings.LastIndexByte(v, ':')
	if i < 0 {
		return
	}
	dir := v[:i]
	n, err := strconv.Atoi(v[i+1:])
	if err != nil {
		return
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, worker)
	os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if es, _ := os.ReadDir(dir); len(es) >= n {
			return
		}
	}
}
