package store

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
)

// Reading a SQLite database's files with a plain open/read/close would
// corrupt it: POSIX advisory locks belong to the process and the inode, and
// closing ANY descriptor of a file releases every lock the process holds on
// it, including the locks of SQLite connections open in the same process
// (sqlite.org/howtocorrupt.html, section 2.2). Another process could then
// write while this one believes it holds a lock.
//
// So the scanner keeps a descriptor of each SQLite file it reads for the life
// of the process, reading with ReadAt. A descriptor is closed only when its
// path has come to name another inode (the file was deleted or replaced):
// locks on the old inode no longer matter to anyone. Every other file (a
// chromem collection has one per document, PostgreSQL's data directory
// thousands) is closed after its scan, so that a probe of a large store does
// not run out of descriptors.
//
// A file is treated as SQLite's when it could be one: its name ends in
// -wal, -shm or -journal (SQLite's own companions, which have no reliable
// header) or it begins with SQLite's header. Any other non-empty file is not
// a database SQLite would open, so no SQLite lock can be held on it. An
// empty file is not opened at all (it has no bytes to scan, and SQLite
// writes its header into an empty file it opens, so it could become one).
var fds = struct {
	sync.Mutex
	m map[string]*heldFile
}{m: map[string]*heldFile{}}

type heldFile struct {
	f        *os.File
	dev, ino uint64
}

// sqliteHeader is the first 16 bytes of every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// openScan opens path for a scan and returns its descriptor, the file's
// size, and whether the descriptor is held (a SQLite file's, kept open: the
// caller must not close it) or the caller's to close. For an empty file
// that is not held already it returns no descriptor (nil, 0, false). It
// returns an error wrapping fs.ErrNotExist when path does not exist.
func openScan(path string) (f *os.File, size int64, held bool, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, 0, false, fmt.Errorf("stat %s: no inode information", path)
	}
	fds.Lock()
	defer fds.Unlock()
	if h := fds.m[path]; h != nil {
		if h.dev == uint64(st.Dev) && h.ino == uint64(st.Ino) {
			return h.f, fi.Size(), true, nil
		}
		h.f.Close() // another inode now: nobody locks the old one through this path
		delete(fds.m, path)
	}
	if fi.Size() == 0 {
		return nil, 0, false, nil
	}
	f, err = os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	if !maybeSQLite(path, f, fi.Size()) {
		return f, fi.Size(), false, nil
	}
	fds.m[path] = &heldFile{f: f, dev: uint64(st.Dev), ino: uint64(st.Ino)}
	return f, fi.Size(), true, nil
}

// OpenRead opens path for reading outside a scan, with the same care: a
// file SQLite could have open in this process (see above) is read through
// the descriptor the scanner holds for it, and done does not close it; any
// other file is closed by done. An empty file not held already is not
// opened: f is nil and size 0 (SQLite may hold locks on an empty database
// file it opened). Callers read with ReadAt and Stat only (the descriptor
// is shared, its offset is not theirs), and must call done.
func OpenRead(path string) (f *os.File, size int64, done func(), err error) {
	f, size, held, err := openScan(path)
	switch {
	case err != nil:
		return nil, 0, nil, err
	case f == nil || held:
		return f, size, func() {}, nil
	}
	return f, size, func() { f.Close() }, nil
}

// maybeSQLite reports whether the file at path, open as f, could be a file
// SQLite opens (see above). A header that cannot be read counts as SQLite's:
// holding a descriptor too many is safe, closing one of a database is not.
func maybeSQLite(path string, f *os.File, size int64) bool {
	if strings.HasSuffix(path, "-wal") || strings.HasSuffix(path, "-shm") || strings.HasSuffix(path, "-journal") {
		return true
	}
	if size < int64(len(sqliteHeader)) {
		return false // SQLite writes a whole page: a shorter non-empty file is not a database
	}
	var b [len(sqliteHeader)]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		return true
	}
	return string(b[:]) == sqliteHeader
}

// releaseGone closes the held descriptors whose path no longer exists or now
// names another inode. Holding them would keep deleted files, such as
// recycled WAL segments full of erased bytes, alive on disk while the scan
// could no longer see them. ScanFiles calls it after every scan.
func releaseGone() {
	fds.Lock()
	defer fds.Unlock()
	for path, h := range fds.m {
		fi, err := os.Stat(path)
		if err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(st.Dev) == h.dev && uint64(st.Ino) == h.ino {
				continue
			}
		}
		h.f.Close()
		delete(fds.m, path)
	}
}
