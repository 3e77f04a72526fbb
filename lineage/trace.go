package lineage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/amnesia-dev/amnesia/subject"
)

// TraceVersion is the first field of every trace; an incompatible change of
// the trace format gets a new version.
const TraceVersion = "amnesia.trace/v1"

// ArtifactID returns the id of the artifact at (scope, store, key): a keyed
// digest, so that certificates and logs can name an artifact without
// revealing its key.
func ArtifactID(k *subject.Keyer, scope, store, key string) string {
	d := k.Digest("amnesia.artifact/v1", scope, store, key)
	return "art:" + hex.EncodeToString(d[:10])
}

// ContentDigest returns the keyed digest of content, hex.
func ContentDigest(k *subject.Keyer, content []byte) string {
	d := k.Digest("amnesia.content/v1", string(content))
	return hex.EncodeToString(d[:])
}

// Trace is the exact set of artifacts an erasure of one subject touches. It
// is a pure function of a View, and its ID is the SHA-256 of its canonical
// JSON encoding with the ID field empty.
type Trace struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	Scope      string          `json:"scope"`
	Subject    string          `json:"subject"` // full keyed digest, hex
	SubjectRef string          `json:"subject_ref"`
	Artifacts  []TraceArtifact `json:"artifacts"` // to erase, sorted by store then key
	Mentions   []TraceArtifact `json:"mentions"`  // third-party: for a person, never erased
	Erased     int             `json:"already_erased"`
	Plan       []StorePlan     `json:"plan"`
	// HeadSeq and HeadHash are the ledger head of the view it was built
	// from (View.HeadSeq); not part of the trace's content or encoding: a
	// trace read back from JSON has none, and is checked in full.
	HeadSeq  int64  `json:"-"`
	HeadHash string `json:"-"`
}

// TraceArtifact is one artifact of a trace.
type TraceArtifact struct {
	ID          string   `json:"id"`
	Kind        Kind     `json:"kind"`
	Store       string   `json:"store"`
	Key         string   `json:"key"`
	Digest      string   `json:"digest"`
	DerivedFrom []string `json:"derived_from"`
	Owner       string   `json:"owner,omitempty"` // mentions only: the owning subject's ref
}

// StorePlan lists what the erasure will delete in one store.
type StorePlan struct {
	Store  string   `json:"store"`
	Delete []string `json:"delete"` // keys, sorted
	Kinds  []string `json:"kinds"`  // "<kind>=<count>", sorted
}

// BuildTrace computes the trace of v. It returns ErrNoLineage when the view
// holds nothing, and ErrAlreadyErased when every reachable artifact already
// reached VERIFIED in an earlier erasure.
func BuildTrace(v *View) (*Trace, error) {
	if len(v.Owned) == 0 && len(v.Mentions) == 0 {
		return nil, ErrNoLineage
	}
	owned := closure(v, v.Owned)
	mentioned := closure(v, v.Mentions)
	t := &Trace{
		Version:    TraceVersion,
		Scope:      v.Scope,
		Subject:    v.Subject.String(),
		SubjectRef: v.Subject.Ref(),
		Artifacts:  []TraceArtifact{},
		Mentions:   []TraceArtifact{},
		Plan:       []StorePlan{},
	}
	for id := range owned {
		if v.Erased[id] == "VERIFIED" {
			t.Erased++
			continue
		}
		t.Artifacts = append(t.Artifacts, traceArtifact(v, id, ""))
	}
	for id := range mentioned {
		if owned[id] || v.Erased[id] == "VERIFIED" {
			continue
		}
		t.Mentions = append(t.Mentions, traceArtifact(v, id, v.Artifacts[id].Subject.Ref()))
	}
	if len(t.Artifacts) == 0 && (t.Erased > 0 || len(t.Mentions) == 0) {
		// Mentions were reported (NEEDS_HUMAN) by the erasure that erased
		// the rest; a subject with mentions only still gets a trace.
		return nil, ErrAlreadyErased
	}
	sortArtifacts(t.Artifacts)
	sortArtifacts(t.Mentions)
	t.Plan = plan(t.Artifacts)
	id, err := t.digest()
	if err != nil {
		return nil, err
	}
	t.ID = id
	t.HeadSeq, t.HeadHash = v.HeadSeq, v.HeadHash
	return t, nil
}

// Encode returns the canonical JSON encoding of t (indented, trailing newline).
// It is the JSON that encoding/json writes with SetEscapeHTML(false) and
// SetIndent("", "  "), written directly (appendTrace).
func (t *Trace) Encode() ([]byte, error) {
	return appendTrace(make([]byte, 0, 512+400*(len(t.Artifacts)+len(t.Mentions))), t), nil
}

// Check verifies that t.ID matches its content.
func (t *Trace) Check() error {
	if t.Version != TraceVersion {
		return fmt.Errorf("check trace: version %q, want %q", t.Version, TraceVersion)
	}
	id, err := t.digest()
	if err != nil {
		return err
	}
	if id != t.ID {
		return fmt.Errorf("check trace: id does not match content")
	}
	return nil
}

func (t *Trace) digest() (string, error) {
	c := *t
	c.ID = ""
	b, err := c.Encode()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func closure(v *View, roots []string) map[string]bool {
	seen := map[string]bool{}
	stack := append([]string(nil), roots...)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] || v.Artifacts[id] == nil {
			continue
		}
		seen[id] = true
		stack = append(stack, v.Children[id]...)
	}
	return seen
}

func traceArtifact(v *View, id, owner string) TraceArtifact {
	a := v.Artifacts[id]
	parents := append([]string{}, a.Parents...)
	sort.Strings(parents)
	return TraceArtifact{ID: a.ID, Kind: a.Kind, Store: a.Store, Key: a.Key, Digest: a.Digest, DerivedFrom: parents, Owner: owner}
}

// sortArtifacts sorts as by store, then key, then id (byte order): the
// id only orders descendants of two scopes at one location, which would
// otherwise keep the order of a map's walk.
func sortArtifacts(as []TraceArtifact) {
	slices.SortFunc(as, func(a, b TraceArtifact) int {
		if c := strings.Compare(a.Store, b.Store); c != 0 {
			return c
		}
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

func plan(as []TraceArtifact) []StorePlan {
	var out []StorePlan
	kinds := map[string]int{}
	flush := func() {
		if len(out) == 0 {
			return
		}
		p := &out[len(out)-1]
		for k, n := range kinds {
			p.Kinds = append(p.Kinds, fmt.Sprintf("%s=%d", k, n))
		}
		sort.Strings(p.Kinds)
		kinds = map[string]int{}
	}
	for _, a := range as {
		if len(out) == 0 || out[len(out)-1].Store != a.Store {
			flush()
			out = append(out, StorePlan{Store: a.Store, Delete: []string{}})
		}
		p := &out[len(out)-1]
		p.Delete = append(p.Delete, a.Key)
		kinds[string(a.Kind)]++
	}
	flush()
	if out == nil {
		out = []StorePlan{}
	}
	return out
}

// DecodeTrace parses a trace and checks its id.
func DecodeTrace(b []byte) (*Trace, error) {
	var t Trace
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("decode trace: %w", err)
	}
	if err := t.Check(); err != nil {
		return nil, err
	}
	return &t, nil
}
