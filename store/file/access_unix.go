//go:build unix

package file

import "golang.org/x/sys/unix"

func accessW(dir string) error { return unix.Access(dir, unix.W_OK) }
