//go:build unix

package sqlitex

import (
	"database/sql"
	"fmt"
	"os"
	"sync"
	"syscall"
	"weak"
)

// writers holds the descriptors zeroInPlace writes database files through,
// by device and inode: closing any descriptor of a file drops every POSIX
// lock this process holds on it, SQLite's included (see store.OpenRead).
// One is closed only once its path names no file or another one (as
// store's held read descriptors are), so that a replaced database is not
// kept alive on disk by it.
var writers struct {
	sync.Mutex
	m map[[2]uint64]writer
}

type writer struct {
	f    *os.File
	path string
}

// writeHandle returns a descriptor open for writing on the file at path.
func writeHandle(path string) (*os.File, [2]uint64, error) {
	want, err := inode(os.Stat(path))
	if err != nil {
		return nil, want, err
	}
	writers.Lock()
	defer writers.Unlock()
	for id, w := range writers.m {
		if now, err := inode(os.Stat(w.path)); err != nil || now != id {
			w.f.Close()
			delete(writers.m, id)
		}
	}
	if w, ok := writers.m[want]; ok {
		return w.f, want, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, want, err
	}
	got, err := inode(f.Stat())
	if err != nil {
		return nil, got, err // f stays open: see writers
	}
	if writers.m == nil {
		writers.m = map[[2]uint64]writer{}
	}
	writers.m[got] = writer{f, path}
	return f, got, nil
}

func inode(fi os.FileInfo, err error) ([2]uint64, error) {
	if err != nil {
		return [2]uint64{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]uint64{}, fmt.Errorf("%s: no device and inode", fi.Name())
	}
	return [2]uint64{uint64(st.Dev), uint64(st.Ino)}, nil
}

// openedFiles is the device and inode of the file at each database's path
// when Open opened it: the file its connections hold, even if another file
// is put at the path later.
var openedFiles struct {
	sync.Mutex
	m map[weak.Pointer[sql.DB]][2]uint64
}

// openedAs records the file at path as the one db opened.
func openedAs(db *sql.DB, path string) {
	id, err := inode(os.Stat(path))
	if err != nil {
		return
	}
	openedFiles.Lock()
	defer openedFiles.Unlock()
	if openedFiles.m == nil {
		openedFiles.m = map[weak.Pointer[sql.DB]][2]uint64{}
	}
	for k := range openedFiles.m {
		if k.Value() == nil {
			delete(openedFiles.m, k)
		}
	}
	openedFiles.m[weak.Make(db)] = id
}

// opened is the file db's connections hold (openedAs).
func opened(db *sql.DB) ([2]uint64, bool) {
	openedFiles.Lock()
	defer openedFiles.Unlock()
	id, ok := openedFiles.m[weak.Make(db)]
	return id, ok
}
