//go:build faiss

package main

// Built with -tags faiss, the binary can also open FAISS index files
// (store/faiss needs FAISS's C API: scripts/test-faiss installs it).
import _ "github.com/amnesia-dev/amnesia/store/faiss"
