//go:build !unix

package transparency

import "errors"

// lockDir: cosigning needs flock, so a witness runs on unix only (verifying
// cosignatures does not).
func lockDir(string) (func(), error) {
	return nil, errors.New("the witness needs flock(2): run it on a unix system")
}
