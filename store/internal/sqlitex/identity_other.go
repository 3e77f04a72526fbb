//go:build !unix

package sqlitex

// FileIdentity is "" where the file system gives no inode: no identity is
// checked (store.Identifier).
func FileIdentity(path string) (string, error) { return "", nil }
