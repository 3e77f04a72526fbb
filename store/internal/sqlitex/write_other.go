//go:build !unix

package sqlitex

import (
	"errors"
	"os"
)

// writeHandle: zeroing in place is done only where the file's identity
// (device and inode) tells its descriptors apart; elsewhere Reclaim
// rebuilds.
func writeHandle(path string) (*os.File, error) {
	return nil, errors.New("not on this operating system")
}
