package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/store"
)

// Check implements store.CheckFunc: the configuration names a format and a
// key, the file exists and is a regular file with one link, its directory
// is writable (the rewrite creates a temporary file there), and its header
// (CSV) or schema (Parquet) has the key, subject and content columns. For
// JSONL it parses the first line only, so as to learn nothing of the
// records beyond field names: every row is read at erasure time. The
// messages name fields and columns, never values.
func Check(ctx context.Context, c store.Config) []store.Problem {
	bad := func(key, format string, a ...any) []store.Problem {
		return []store.Problem{{Severity: store.SeverityError, Key: key, Message: fmt.Sprintf(format, a...)}}
	}
	if err := ctx.Err(); err != nil {
		return bad("", "check cancelled: %v", err)
	}
	o := optionsOf(c)
	if err := o.validate(); err != nil {
		key := "key"
		switch {
		case c.Path == "":
			key = "path"
		case o.Format == "":
			key = "format"
		}
		return bad(key, "%v", err)
	}
	st, err := os.Stat(o.Path)
	if err != nil {
		return bad("path", "%s: %v (is the path right?)", o.Path, err)
	}
	if !st.Mode().IsRegular() {
		return bad("path", "%s is not a regular file", o.Path)
	}
	if n := links(st); n > 1 {
		return bad("path", "%s has %d hard links: a rewrite would leave the erased rows under the other names; remove the other links", o.Path, n)
	}
	dir := filepath.Dir(o.Path)
	if err := writable(dir); err != nil {
		return bad("path", "%s: the erasure rewrites the file through a temporary file in its directory, which is not writable: %v", dir, err)
	}
	b, err := os.ReadFile(o.Path)
	if err != nil {
		return bad("path", "%s: %v", o.Path, err)
	}
	var f format
	switch o.Format {
	case JSONL:
		f = jsonlFormat{}
		// The first non-blank line only: field names.
		if i := firstLineEnd(b); i >= 0 {
			b = b[:i]
		}
	case CSV:
		f = csvFormat{}
		// The header only.
		if i := firstLineEnd(b); i >= 0 {
			b = b[:i]
		}
	case Parquet:
		f = parquetFormat{}
	}
	if o.Format == Parquet {
		if _, err := parquetSchemaCheck(b, &o); err != nil {
			return bad("path", "%s: %v", o.Path, err)
		}
		return nil
	}
	if _, err := f.read(ctx, b, &o); err != nil {
		return bad("path", "%s: %v", o.Path, err)
	}
	return nil
}

// firstLineEnd returns the end of the first non-blank line, or -1.
func firstLineEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] == '\n' {
			if len(trimSpace(b[:i])) > 0 {
				return i + 1
			}
		}
	}
	return -1
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// writable reports whether a file can be created in dir, without creating
// one (access(2) with W_OK).
func writable(dir string) error {
	return accessW(dir)
}

func init() {
	store.RegisterCheck(Type, []string{"name", "type", "path", "format", "key", "subject", "content", "out_of_scope"}, Check)
}
