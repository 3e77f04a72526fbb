//go:build !linux

package bench

import "syscall"

// chromaProcAttr: outside Linux the private Chroma server is not tied to
// this process; it is left running when the process exits.
func chromaProcAttr() *syscall.SysProcAttr { return nil }
