//go:build !linux

package bench

import "errors"

func dropCache(string) error {
	return errors.New("dropping the page cache is implemented on Linux only")
}
