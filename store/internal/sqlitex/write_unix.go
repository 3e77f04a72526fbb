//go:build unix

package sqlitex

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

// writers holds the descriptors zeroInPlace writes database files through,
// by device and inode, open for the life of the process: closing any
// descriptor of a file drops every POSIX lock this process holds on it,
// SQLite's included (see store.OpenRead).
var writers struct {
	sync.Mutex
	m map[[2]uint64]*os.File
}

// writeHandle returns a descriptor open for writing on the file at path.
func writeHandle(path string) (*os.File, error) {
	want, err := inode(os.Stat(path))
	if err != nil {
		return nil, err
	}
	writers.Lock()
	defer writers.Unlock()
	if f := writers.m[want]; f != nil {
		return f, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	got, err := inode(f.Stat())
	if err != nil {
		return nil, err // f stays open: see writers
	}
	if writers.m == nil {
		writers.m = map[[2]uint64]*os.File{}
	}
	writers.m[got] = f // held even if path now names another file
	if got != want {
		return nil, fmt.Errorf("%s was replaced while it was opened", path)
	}
	return f, nil
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
