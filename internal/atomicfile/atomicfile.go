// Package atomicfile is the one place amnesia replaces a file atomically,
// makes a rename or unlink durable, and destroys a file: every package
// that writes its own state (internal/state, internal/saga,
// transparency's witness) uses these, so each is written, and reviewed,
// once. It imports nothing of amnesia, so any package may use it.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path so that a reader, or the file after a
// crash, is either the old file or the whole new one: a temporary file in
// the same directory, written, fsynced and closed, renamed over path, then
// the directory fsynced. The file gets mode (before any byte is written).
// Every error is returned, the directory fsync's included: until it
// succeeds the rename may not survive a crash.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	return publish(path, data, mode, os.Rename, true)
}

// Replace is WriteFile without the directory fsync: after a crash the file
// is still the old one or the whole new one (the new content is fsynced
// before the rename), but the rename itself may be lost. It is for a file
// whose previous version stays correct when the new one is lost, a record
// that may only lag (ledger-state.json: the ledger's log is never smaller
// than the last checkpoint it records), and saves one fsync a write.
func Replace(path string, data []byte, mode os.FileMode) error {
	return publish(path, data, mode, os.Rename, false)
}

// WriteNew is WriteFile for a name that must not exist yet: the temporary
// file is linked to path instead of renamed over it, so that of two
// writers of the same name one wins and the other gets an error wrapping
// fs.ErrExist, and path never exists partly written.
func WriteNew(path string, data []byte, mode os.FileMode) error {
	return publish(path, data, mode, os.Link, true)
}

// publish writes data to a temporary file beside path (mode set before any
// byte, fsynced, closed), puts it in place with place (rename or link) and
// fsyncs the directory (unless !syncDir). The temporary name is removed in any case (a no-op
// after a rename).
func publish(path string, data []byte, mode os.FileMode, place func(tmp, path string) error, syncDir bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := place(tmp, path); err != nil || !syncDir {
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that a create, rename or unlink in it is
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Shred overwrites the file at path with zeros, fsyncs it, unlinks it and
// fsyncs its directory. A missing file is not an error. On copy-on-write or
// journaling file systems and on SSDs the old blocks may survive the
// overwrite: it is a best effort on top of what else protects the content
// (the evidence amnesia shreds was only ever ciphertext).
func Shred(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = Zero(f)
	f.Close()
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Zero overwrites every byte of the open file f with zeros and fsyncs it:
// Shred's overwrite, for a file that was already replaced or unlinked and
// is reachable only through f. The same limits as Shred's apply.
func Zero(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(make([]byte, st.Size()), 0); err != nil {
		return err
	}
	return f.Sync()
}
