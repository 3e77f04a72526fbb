//go:build !unix

package sqlitex

import (
	"database/sql"
	"errors"
	"os"
)

// writeHandle: zeroing in place is done only where the file's identity
// (device and inode) tells its descriptors apart; elsewhere Reclaim
// rebuilds.
func writeHandle(path string) (*os.File, [2]uint64, error) {
	return nil, [2]uint64{}, errors.New("not on this operating system")
}

func inode(fi os.FileInfo, err error) ([2]uint64, error) {
	return [2]uint64{}, errors.New("no device and inode on this operating system")
}

// openedAs records nothing where files have no device and inode.
func openedAs(db *sql.DB, path string) {}

func opened(db *sql.DB) ([2]uint64, bool) { return [2]uint64{}, false }
