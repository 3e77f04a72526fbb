package saga

import "sync"

// JournalSyncs records, from now until stop is called, the last entry
// (step and phase) of each journal fsync.
func JournalSyncs() (synced func() []string, stop func()) {
	var mu sync.Mutex
	var got []string
	onJournalSync = func(e JournalEntry) {
		mu.Lock()
		got = append(got, e.Phase+" "+e.Step)
		mu.Unlock()
	}
	return func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), got...)
		}, func() {
			onJournalSync = nil
			onJournalSyncFile = nil
			onJournalSyncDir = nil
		}
}

// OnJournalSyncFile calls fn with the journal's path after each fsync.
func OnJournalSyncFile(fn func(path string)) { onJournalSyncFile = fn }

// OnJournalSyncDir calls fn with each directory a new journal fsyncs.
func OnJournalSyncDir(fn func(dir string)) { onJournalSyncDir = fn }

// SetBatchOwnerCache turns the batch's shared owner lookups on or off
// (lookUpOwners) and returns the function that restores the setting.
func SetBatchOwnerCache(on bool) (restore func()) {
	was := batchOwnerCache
	batchOwnerCache = on
	return func() { batchOwnerCache = was }
}
