//go:build !amnesia_testhooks

package saga

// TestHooks reports whether this binary was built with the test hooks
// (build tag amnesia_testhooks). A release build has none.
const TestHooks = false

// afterJournalAppend does nothing in a release build: the crash point of
// testhooks.go, and the environment variable it reads, are only in a
// binary built with the tag amnesia_testhooks.
func afterJournalAppend(int) {}
