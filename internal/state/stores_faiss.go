//go:build faiss

package state

// Built with -tags faiss, the binary can also open FAISS index files.
import _ "github.com/amnesia-dev/amnesia/store/faiss"
