//go:build !amnesia_testhooks

package main

// testBarrier does nothing in a release build: the worker barrier of
// testhooks.go, and the environment variable it reads, are only in a binary
// built with the tag amnesia_testhooks.
func testBarrier(string) {}
