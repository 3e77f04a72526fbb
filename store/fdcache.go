package store

import (
	"fmt"
	"os"
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
// So the scanner opens each file once and keeps the descriptor for the life
// of the process, reading with ReadAt. A descriptor is closed only when its
// path has come to name another inode (the file was deleted or replaced):
// locks on the old inode no longer matter to anyone.
var fds = struct {
	sync.Mutex
	m map[string]*heldFile
}{m: map[string]*heldFile{}}

type heldFile struct {
	f        *os.File
	dev, ino uint64
}

// openHeld returns a held descriptor for path and the file's current size.
// It returns an error wrapping fs.ErrNotExist when path does not exist.
func openHeld(path string) (*os.File, int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, 0, fmt.Errorf("stat %s: no inode information", path)
	}
	fds.Lock()
	defer fds.Unlock()
	if h := fds.m[path]; h != nil {
		if h.dev == uint64(st.Dev) && h.ino == uint64(st.Ino) {
			return h.f, fi.Size(), nil
		}
		h.f.Close() // another inode now: nobody locks the old one through this path
		delete(fds.m, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fds.m[path] = &heldFile{f: f, dev: uint64(st.Dev), ino: uint64(st.Ino)}
	return f, fi.Size(), nil
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
