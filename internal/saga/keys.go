package saga

import (
	"path/filepath"
	"sort"

	"github.com/amnesia-dev/amnesia/internal/state"
)

// SignedUnpublished returns the ids of erasures whose certificate step is
// done but whose certificate is not published: resumed, they sign again
// with the current key and must get the envelope whose digest they
// journaled, so the signing key must not change under them (`amnesia keys
// rotate` refuses until they are finished).
func SignedUnpublished(dir *state.Dir) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir.Path, "erasures", "*", "journal.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []string
	for _, p := range paths {
		id := filepath.Base(filepath.Dir(p))
		if published, err := stepDone(p, "publish"); err != nil {
			return nil, err
		} else if published {
			continue
		}
		signed, err := stepDone(p, "certificate")
		if err != nil {
			return nil, err
		}
		if signed {
			out = append(out, id)
		}
	}
	return out, nil
}

// stepDone reports whether the journal at path has a done entry of step.
func stepDone(path, step string) (bool, error) {
	es, err := readEntries(path)
	if err != nil {
		return false, err
	}
	return doneIn(es, step), nil
}
