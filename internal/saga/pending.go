package saga

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

// Pending returns the trace of an unfinished erasure (journal started,
// certificate not published) of the subject in scope, or nil when there is
// none. `forget` resumes it instead of tracing anew: after the decide step
// the ledger already marks the artifacts erased, so a new trace would find
// nothing and the erasure would never finish.
func Pending(dir *state.Dir, subjectKey, scope string) (*lineage.Trace, error) {
	paths, err := filepath.Glob(filepath.Join(dir.Path, "erasures", "*", "journal.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	for _, p := range paths {
		id := filepath.Base(filepath.Dir(p))
		if _, err := os.Stat(dir.CertificatePath(id)); err == nil {
			continue
		}
		traceID, err := plannedTrace(p)
		if err != nil || traceID == "" {
			continue // a journal without a finished plan step has erased nothing
		}
		b, err := os.ReadFile(dir.TracePath(traceID))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		t, err := lineage.DecodeTrace(b)
		if err != nil {
			return nil, err
		}
		if t.Subject == subjectKey && t.Scope == scope {
			return t, nil
		}
	}
	return nil, nil
}

// plannedTrace reads the trace id from a journal's finished plan step.
func plannedTrace(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var e entry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Step != "plan" || e.Phase != phaseDone {
			continue
		}
		var p planResult
		if err := json.Unmarshal(e.Result, &p); err != nil {
			return "", err
		}
		return p.Trace, nil
	}
	return "", sc.Err()
}
