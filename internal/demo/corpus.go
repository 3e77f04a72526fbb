// Package demo builds a synthetic personal-data corpus on the embedded
// stores and tells the whole erasure story on it.
package demo

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
)

// Person is a synthetic data subject. Every value is generated; none is real.
type Person struct {
	ID    string // the subject id applications use: an email address
	Name  string
	Phone string
	City  string
}

// Document is one ingested document.
type Document struct {
	ID       string
	Owner    int   // index into Corpus.People
	Mentions []int // other people this document is about
	Text     string
}

// Corpus is a deterministic synthetic corpus.
type Corpus struct {
	People []Person
	Docs   []Document
}

var (
	firstNames = []string{"Alice", "Bruno", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hiroshi", "Ines", "Jonas", "Kavya", "Lars", "Mei", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tomasz", "Ulla", "Viktor", "Wanjiru", "Yusuf"}
	lastNames  = []string{"Moreau", "Kowalski", "Okafor", "Lindqvist", "Haddad", "Tanaka", "Fernandes", "Novak", "Brennan", "Castillo", "Dubois", "Eriksen"}
	cities     = []string{"Lisbon", "Gdansk", "Lagos", "Uppsala", "Beirut", "Osaka", "Porto", "Brno", "Cork", "Valencia", "Lyon", "Bergen"}
	topics     = []string{"a billing dispute about invoice", "a request to change the delivery address for order", "a complaint about a delayed refund for order", "a question about the data stored for account", "an appointment to review insurance claim", "a follow-up on the support ticket"}
	details    = []string{"asked to be called back in the afternoon", "mentioned an allergy to penicillin", "said the previous agent promised a discount", "wants all letters in large print", "reported that the parcel arrived damaged", "prefers to be contacted by phone only"}
)

// Generate builds a corpus of people×docsEach documents from seed.
func Generate(seed uint64, people, docsEach int) *Corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &Corpus{}
	for i := 0; i < people; i++ {
		first := firstNames[i%len(firstNames)]
		last := lastNames[(i*7+3)%len(lastNames)]
		c.People = append(c.People, Person{
			ID:    fmt.Sprintf("%s.%s.%d@example.org", strings.ToLower(first), strings.ToLower(last), 100+i),
			Name:  first + " " + last,
			Phone: fmt.Sprintf("+44 7700 9%05d", rng.IntN(100000)),
			City:  cities[rng.IntN(len(cities))],
		})
	}
	for i := 0; i < people; i++ {
		for d := 0; d < docsEach; d++ {
			p := c.People[i]
			doc := Document{ID: fmt.Sprintf("doc-%03d-%02d", i, d), Owner: i}
			var b strings.Builder
			fmt.Fprintf(&b, "Case note %d-%d. %s from %s (phone %s, email %s) contacted us about %s %d. ",
				i, d, p.Name, p.City, p.Phone, p.ID, topics[rng.IntN(len(topics))], 10000+rng.IntN(90000))
			fmt.Fprintf(&b, "The customer %s. ", details[rng.IntN(len(details))])
			fmt.Fprintf(&b, "Reference %08x was opened on day %d and assigned to desk %d. ", rng.Uint32(), 1+rng.IntN(365), 1+rng.IntN(40))
			if d%4 == 3 { // some documents are about somebody else too
				o := (i + 1 + rng.IntN(people-1)) % people
				q := c.People[o]
				doc.Mentions = append(doc.Mentions, o)
				fmt.Fprintf(&b, "%s said that %s (%s) was also affected and should be told. ", p.Name, q.Name, q.Phone)
			}
			fmt.Fprintf(&b, "%s %s. Follow-up scheduled for week %d.", p.Name, details[rng.IntN(len(details))], 1+rng.IntN(52))
			doc.Text = b.String()
			c.Docs = append(c.Docs, doc)
		}
	}
	return c
}

// Chunk splits text into chunks of whole sentences of at most max bytes.
func Chunk(text string, max int) []string {
	var out []string
	var cur strings.Builder
	for _, s := range strings.SplitAfter(text, ". ") {
		if cur.Len() >= max/4 && cur.Len()+len(s) > max {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
		cur.WriteString(s)
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, strings.TrimSpace(cur.String()))
	}
	return out
}

// Embed is a deterministic local embedder: hashed bag of words and
// character trigrams, L2-normalised. Not a language model, but similar texts
// get similar vectors, which is all the similarity probe needs.
func Embed(text string, dim int) []float32 {
	v := make([]float64, dim)
	add := func(tok string, w float64) {
		h := fnv.New64a()
		h.Write([]byte(tok))
		x := h.Sum64()
		sign := 1.0
		if x>>63 == 1 {
			sign = -1
		}
		v[x%uint64(dim)] += sign * w
	}
	lower := strings.ToLower(text)
	for _, w := range strings.Fields(lower) {
		add("w:"+w, 1)
	}
	for i := 0; i+3 <= len(lower); i++ {
		add("t:"+lower[i:i+3], 0.3)
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	out := make([]float32, dim)
	for i, x := range v {
		if n > 0 {
			out[i] = float32(x / n)
		}
	}
	return out
}
