//go:build amnesia_testhooks

package saga

import (
	"os"
	"strconv"
	"syscall"
)

// TestHooks reports whether this binary was built with the test hooks
// (build tag amnesia_testhooks). A release build has none.
const TestHooks = true

// afterJournalAppend is a crash point for tests: with
// AMNESIA_CRASH_AFTER_JOURNAL=k, the process SIGKILLs itself right after a
// journal's k-th entry is written (the page cache
// keeps it; fsyncs are in journal.sync). Only a binary built with the tag
// amnesia_testhooks reads the variable (cmd/amnesia's tests build one).
func afterJournalAppend(n int) {
	k, _ := strconv.Atoi(os.Getenv("AMNESIA_CRASH_AFTER_JOURNAL"))
	if k > 0 && n == k {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
