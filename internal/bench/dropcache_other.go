//go:build !linux

package bench

import "errors"

func dropCache(string) error {
	return errors.New("dropping the page cache is implemented on Linux only")
}

func residentBytes(string) (int64, int64, error) {
	return 0, 0, errors.New("telling what the page cache holds is implemented on Linux only")
}
