//go:build unix

package sqlitex

import (
	"fmt"
	"os"
	"syscall"
)

// FileIdentity names the file at path by its device and inode
// (store.Identifier): VACUUM rewrites a database in place and keeps them;
// a file put in its place, or another host's file at the same path, has
// others.
func FileIdentity(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("identity of %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", nil
	}
	return fmt.Sprintf("file device %d inode %d", st.Dev, st.Ino), nil
}
