package bench

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dropCache drops a file's clean pages from the page cache.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// residentBytes is how many bytes of the file at path the page cache
// holds (mincore over a read-only mapping), and the file's size; a
// missing file holds none.
func residentBytes(path string) (resident, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, 0, nil
		}
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, 0, err
	}
	size = st.Size()
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (size+page-1)/page)
	// x/sys/unix has no Mincore wrapper.
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, 0, fmt.Errorf("mincore %s: %w", path, e)
	}
	for i, v := range vec {
		if v&1 != 0 {
			resident += min(page, size-int64(i)*page)
		}
	}
	return resident, size, nil
}
