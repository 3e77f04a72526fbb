//go:build unix

package transparency

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive flock on path (created 0600), so that two
// cosign runs of one witness cannot both extend the same state: the second
// waits, then checks against what the first stored.
func lockDir(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
