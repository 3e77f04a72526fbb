// Package bench measures what each way of deleting leaves behind, per store,
// and how fast amnesia is. Its commands write JSON under bench/results/;
// RESULTS.md is generated from those files, never edited by hand.
package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/amnesia-dev/amnesia/internal/demo"
)

// Corpus sizes of a full run; smoke runs pass smaller ones.
const (
	FullSubjects = 200
	FullDocsEach = 15 // 3,000 documents
)

// Boilerplate is text several subjects' documents share byte for byte: its
// bytes found after an erasure belong to someone else, and are reported apart.
var Boilerplate = []string{
	"This message and any attachments are confidential and intended solely for the addressee. If you received it in error, please delete it.",
	"Our support desk is open Monday to Friday from nine to five; urgent cases are routed to the on-call team within the hour.",
	"Please quote the reference number above in every reply so that we can find your case quickly and keep the history together.",
}

// Subject is one person of the corpus.
type Subject struct {
	ID    string
	Name  string
	Phone string
}

// Doc is one source document and its chunks.
type Doc struct {
	ID       string
	Owner    int
	Mentions []int
	Text     string
	Chunks   []string
}

// Corpus is a deterministic, seeded corpus.
type Corpus struct {
	Seed     uint64
	Subjects []Subject
	Docs     []Doc
}

var (
	firsts = []string{"Ada", "Bela", "Cem", "Dana", "Emil", "Fenna", "Goran", "Hana", "Ivo", "Jana", "Kemal", "Lena", "Milo", "Nora", "Otto", "Pia", "Rami", "Sara", "Timo", "Uma"}
	lasts  = []string{"Achterberg", "Bianchi", "Costa", "Dimitrov", "Engel", "Fischer", "Garcia", "Horvat", "Ivanova", "Jensen"}
	towns  = []string{"Aarhus", "Bilbao", "Cluj", "Delft", "Espoo", "Faro", "Graz", "Hilo", "Ithaca", "Jena"}
	issues = []string{"a refund for order", "a change of address for contract", "a question about invoice", "a complaint about parcel", "a cancellation of subscription", "an appointment about claim"}
	notes  = []string{"asked for a call back after six", "mentioned a hearing impairment", "is travelling until the end of the month", "disputes the late fee", "wants paper statements only", "reported a second faulty device"}
)

// NewCorpus generates subjects×docsEach documents, chunked by demo.Chunk.
// One document in five mentions another subject; one in three carries a
// boilerplate paragraph shared with other subjects.
func NewCorpus(seed uint64, subjects, docsEach int) *Corpus {
	rng := rand.New(rand.NewPCG(seed, seed*31+7))
	c := &Corpus{Seed: seed}
	for i := 0; i < subjects; i++ {
		first, last := firsts[i%len(firsts)], lasts[(i/len(firsts))%len(lasts)]
		c.Subjects = append(c.Subjects, Subject{
			ID:    fmt.Sprintf("%s.%s.%04d@example.net", strings.ToLower(first), strings.ToLower(last), i),
			Name:  fmt.Sprintf("%s %s-%d", first, last, i),
			Phone: fmt.Sprintf("+31 6 %04d %04d", rng.IntN(10000), rng.IntN(10000)),
		})
	}
	for i := range c.Subjects {
		s := c.Subjects[i]
		for d := 0; d < docsEach; d++ {
			doc := Doc{ID: fmt.Sprintf("s%04d-d%02d", i, d), Owner: i}
			var b strings.Builder
			fmt.Fprintf(&b, "Ticket %d/%d for %s of %s, reachable at %s or %s, about %s %d. ", i, d, s.Name, towns[rng.IntN(len(towns))], s.Phone, s.ID, issues[rng.IntN(len(issues))], 100000+rng.IntN(900000))
			fmt.Fprintf(&b, "The customer %s and %s. ", notes[rng.IntN(len(notes))], notes[rng.IntN(len(notes))])
			fmt.Fprintf(&b, "Case %08x was logged on day %d by agent %d after a call of %d minutes. ", rng.Uint32(), 1+rng.IntN(365), 1+rng.IntN(90), 1+rng.IntN(60))
			if d%5 == 4 && subjects > 1 {
				o := (i + 1 + rng.IntN(subjects-1)) % subjects
				doc.Mentions = []int{o}
				fmt.Fprintf(&b, "%s also spoke for %s (%s), who has the same problem. ", s.Name, c.Subjects[o].Name, c.Subjects[o].Phone)
			}
			if d%3 == 0 {
				b.WriteString(Boilerplate[rng.IntN(len(Boilerplate))] + " ")
			}
			fmt.Fprintf(&b, "Next step for %s: review in week %d.", s.Name, 1+rng.IntN(52))
			doc.Text = b.String()
			doc.Chunks = demo.Chunk(doc.Text, demo.ChunkSize)
			c.Docs = append(c.Docs, doc)
		}
	}
	return c
}

// DocsOf returns the indexes of the subject's own documents.
func (c *Corpus) DocsOf(subject int) []int {
	var out []int
	for i, d := range c.Docs {
		if d.Owner == subject {
			out = append(out, i)
		}
	}
	return out
}
