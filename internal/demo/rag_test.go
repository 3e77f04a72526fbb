package demo

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/certificate"
)

// TestRAGDemo runs the whole-RAG story on a private redis-server and
// checks each artifact's outcome: after the native delete the caches still
// answer the person's question and the bytes of every store the
// application did not clean (and of the SQLite tables it deleted from) are
// still found; after amnesia's erasure every artifact is verified and the
// caches no longer answer.
func TestRAGDemo(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH (apt-get install redis-server)")
	}
	var out bytes.Buffer
	rep, err := RunRAG(context.Background(), filepath.Join(t.TempDir(), "rag"), RAGOptions{}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !rep.CacheAnswersAfterNative {
		t.Errorf("after the native delete the caches no longer answer: the story shows nothing")
	}
	if rep.CacheAnswersAfterAmnesia {
		t.Errorf("after amnesia's erasure the caches still answer the person's question")
	}
	if !rep.Verified {
		t.Errorf("the certificate did not verify")
	}
	by := map[string]RAGStore{}
	for _, s := range rep.Stores {
		by[s.Name] = s
	}
	for _, name := range []string{"docs", "vectors", "memory", "cache", "semcache", "chat", "log", "train"} {
		s, ok := by[name]
		if !ok {
			t.Errorf("store %s missing from the report", name)
			continue
		}
		n := s.Native
		if n.Records == 0 || s.Amnesia.Records == 0 {
			t.Errorf("%s: no records of the people (native %d, amnesia %d)", name, n.Records, s.Amnesia.Records)
		}
		if !n.Measured {
			t.Errorf("%s: the native delete's residue was not measured", name)
		}
		if (name == "cache" || name == "semcache") && s.Amnesia.Kinds["cache"] != s.Amnesia.Records {
			t.Errorf("%s: kinds %v, want every record a cache entry found through lineage", name, s.Amnesia.Kinds)
		}
		switch name {
		case "cache", "semcache", "log", "train":
			// Not touched by the application: still answered, bytes there.
			if n.Answerable != n.Records || n.BytesFound != n.Records {
				t.Errorf("%s after the native delete: answerable %d, bytes found %d of %d; want all", name, n.Answerable, n.BytesFound, n.Records)
			}
		case "docs", "vectors", "chat":
			if n.Answerable != 0 {
				t.Errorf("%s after the native delete: %d still answerable", name, n.Answerable)
			}
			if n.BytesFound == 0 {
				t.Errorf("%s after the native delete: no bytes found, but a plain DELETE/DEL leaves them", name)
			}
		case "memory":
			if n.Answerable != 0 {
				t.Errorf("memory after chromem-go Delete: %d still answerable", n.Answerable)
			}
		}
		for o, c := range s.Amnesia.Outcomes {
			if !strings.HasPrefix(o, certificate.Verified) {
				t.Errorf("%s: %d artifacts %s after amnesia's erasure, want VERIFIED", name, c, o)
			}
		}
		if s.Amnesia.Outcomes[certificate.Verified+"(physical)"] != s.Amnesia.Records {
			t.Errorf("%s: outcomes %v, want all %d VERIFIED(physical)", name, s.Amnesia.Outcomes, s.Amnesia.Records)
		}
	}
	for _, want := range []string{"2. Native delete", "3. amnesia forget", "semcache", "valid: signed by"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// Without redis-server on PATH and without --redis, the error says how to
// get one.
func TestRAGDemoWithoutRedis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := RunRAG(context.Background(), filepath.Join(t.TempDir(), "rag"), RAGOptions{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "apt-get install redis-server") || !strings.Contains(err.Error(), "--redis") {
		t.Errorf("RunRAG without Redis: %v, want how to install it or give --redis", err)
	}
}
