package lineage

import (
	"encoding/json"
	"fmt"
	"sort"
)

// The helpers below let a backend record a batch with a few set-based
// statements: it reads what the batch's checks need (BatchReads), plans
// every event in memory exactly as Record and Mention one at a time would
// append them (PlanBatch), and writes the plan's rows.

// BatchReads lists what a backend reads before planning a batch: the
// artifacts named (recorded or as parents), and the erasures, edges and
// mentions of the batch's artifacts.
type BatchReads struct {
	IDs       []string // artifact ids and parent ids, for Known
	Artifacts []string // artifact ids, for Erased
	Parented  []string // ids of the artifacts that name parents, for Edges
	Mentioned []string // artifact ids of the mentions, for Mentions
}

// ReadsOf returns what a batch needs read, each list without repeats.
func ReadsOf(artifacts []Artifact, mentions []Mention) BatchReads {
	var r BatchReads
	seen, seenA, seenP, seenM := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, a := range artifacts {
		if !seenA[a.ID] {
			seenA[a.ID] = true
			r.Artifacts = append(r.Artifacts, a.ID)
		}
		if len(a.Parents) > 0 && !seenP[a.ID] {
			seenP[a.ID] = true
			r.Parented = append(r.Parented, a.ID)
		}
		for _, id := range append([]string{a.ID}, a.Parents...) {
			if !seen[id] {
				seen[id] = true
				r.IDs = append(r.IDs, id)
			}
		}
	}
	for _, m := range mentions {
		if !seenM[m.Artifact] {
			seenM[m.Artifact] = true
			r.Mentioned = append(r.Mentioned, m.Artifact)
		}
	}
	return r
}

// BatchState is what the ledger holds for a batch's reads.
type BatchState struct {
	HeadSeq  int64
	HeadHash string
	Known    map[string][2]string // artifact id -> subject, digest
	Erased   map[string]bool      // artifact id -> has an erasure mark
	Edges    map[[2]string]bool   // (child, parent)
	Mentions map[[2]string]bool   // (artifact, subject)
}

// NewBatchState returns an empty state with the given head.
func NewBatchState(seq int64, hash string) *BatchState {
	return &BatchState{HeadSeq: seq, HeadHash: hash, Known: map[string][2]string{}, Erased: map[string]bool{}, Edges: map[[2]string]bool{}, Mentions: map[[2]string]bool{}}
}

// ArtifactRow is an artifacts row to insert, or on conflict (id) to
// update (digest, seq).
type ArtifactRow struct {
	Artifact
	Seq int64
}

// EdgeRow is an edges row.
type EdgeRow struct {
	Child, Parent string
	Seq           int64
}

// MentionRow is a mentions row.
type MentionRow struct {
	Artifact, Subject string
	Seq               int64
}

// BatchPlan is what a batch writes: its events in seq order and the rows
// they index. Artifacts holds one row an id (the first version's scope,
// kind, store and key, the last version's digest and seq: what inserting
// then updating row by row leaves).
type BatchPlan struct {
	Events    []Event
	Artifacts []ArtifactRow
	Edges     []EdgeRow
	Mentions  []MentionRow
}

// PlanBatch plans a batch on state s (which it updates): the events
// Record for each artifact and then Mention for each mention would append,
// with their errors (wrapped with the artifact's id); on error nothing of
// the batch may be written.
func PlanBatch(s *BatchState, artifacts []Artifact, mentions []Mention) (*BatchPlan, error) {
	p := &BatchPlan{}
	rowOf := map[string]int{}
	appendEvent := func(kind string, body any) (int64, error) {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		seq := s.HeadSeq + 1
		h := EventHash(s.HeadHash, seq, kind, b)
		p.Events = append(p.Events, Event{Seq: seq, Kind: kind, Body: string(b), Hash: h})
		s.HeadSeq, s.HeadHash = seq, h
		return seq, nil
	}
	for _, a := range artifacts {
		if err := CheckArtifact(a); err != nil {
			return nil, err
		}
		subj := a.Subject.String()
		old, exists := s.Known[a.ID]
		if exists && old[0] != subj {
			return nil, fmt.Errorf("artifact %s: %w", a.ID, ErrOwnerConflict)
		}
		if s.Erased[a.ID] {
			return nil, fmt.Errorf("artifact %s: %w", a.ID, ErrErased)
		}
		var newParents []string
		for _, par := range a.Parents {
			if _, ok := s.Known[par]; !ok {
				return nil, fmt.Errorf("artifact %s: parent %s: %w", a.ID, par, ErrNotFound)
			}
			if !s.Edges[[2]string{a.ID, par}] {
				newParents = append(newParents, par)
			}
		}
		sort.Strings(newParents)
		if exists && old[1] == a.Digest && len(newParents) == 0 {
			continue // identical: no-op
		}
		// Record inserts one edge row at a time: a parent named twice is
		// refused (the edges primary key), and so is the batch.
		for i := 1; i < len(newParents); i++ {
			if newParents[i] == newParents[i-1] {
				return nil, fmt.Errorf("artifact %s: parent %s is named twice", a.ID, newParents[i])
			}
		}
		seq, err := appendEvent("artifact", ArtifactEvent{ID: a.ID, Scope: a.Scope, Subject: subj, Kind: a.Kind, Store: a.Store, Key: a.Key, Digest: a.Digest, Parents: newParents})
		if err != nil {
			return nil, err
		}
		s.Known[a.ID] = [2]string{subj, a.Digest}
		if i, ok := rowOf[a.ID]; ok {
			p.Artifacts[i].Digest, p.Artifacts[i].Seq = a.Digest, seq
		} else {
			rowOf[a.ID] = len(p.Artifacts)
			row := ArtifactRow{Artifact: a, Seq: seq}
			row.Parents = nil
			p.Artifacts = append(p.Artifacts, row)
		}
		for _, par := range newParents {
			s.Edges[[2]string{a.ID, par}] = true
			p.Edges = append(p.Edges, EdgeRow{Child: a.ID, Parent: par, Seq: seq})
		}
	}
	for _, m := range mentions {
		k := [2]string{m.Artifact, m.Subject.String()}
		if s.Mentions[k] {
			continue
		}
		seq, err := appendEvent("mention", map[string]string{"artifact": m.Artifact, "subject": m.Subject.String()})
		if err != nil {
			return nil, err
		}
		s.Mentions[k] = true
		p.Mentions = append(p.Mentions, MentionRow{Artifact: m.Artifact, Subject: k[1], Seq: seq})
	}
	return p, nil
}
