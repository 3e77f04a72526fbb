package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nearby is read by the strict parser for every store type, and its
// bounds are checked with the key and line named.
func TestNearbyConfig(t *testing.T) {
	load := func(t *testing.T, y string) (*Config, error) {
		p := filepath.Join(t.TempDir(), "amnesia.yaml")
		os.WriteFile(p, []byte(y), 0o600)
		return LoadConfig(p)
	}
	c, err := load(t, "version: 1\nstores:\n  - name: d\n    type: sqlite-doc\n    path: d.db\n    nearby: {quotes: true, quote_fraction: 0.3}\n"+
		"  - name: v\n    type: sqlite-vec\n    path: v.db\n    dimensions: 8\n    nearby:\n      paraphrases: true\n      similarity: 0.95\n      neighbours: 5\n      max_records: 20\n      control_queries: 3\n")
	if err != nil {
		t.Fatal(err)
	}
	d, v := c.Stores[0].Nearby, c.Stores[1].Nearby
	if d == nil || !d.Quotes || d.QuoteFraction != 0.3 || d.Paraphrases || v == nil || !v.Paraphrases || v.Similarity != 0.95 || v.Neighbours != 5 || v.MaxRecords != 20 || v.ControlQueries != 3 {
		t.Errorf("parsed %+v %+v", d, v)
	}
	if c, err := load(t, "version: 1\nstores:\n  - {name: d, type: sqlite-doc, path: d.db}\n"); err != nil || c.Stores[0].Nearby.Enabled() {
		t.Errorf("without nearby: %v, enabled %v (want off by default)", err, c.Stores[0].Nearby.Enabled())
	}
	for _, tc := range []struct{ name, nearby, want string }{
		{"similarity over 1", "{paraphrases: true, similarity: 1.5}", "line 6: store \"d\": nearby.similarity must be more than 0 and at most 1"},
		{"similarity a string", "{similarity: high}", `line 6: stores[0].nearby.similarity: want a number, got the string "high"`},
		{"unknown key", "{paraphrase: true}", "line 6: unknown key paraphrase in stores[0].nearby (did you mean paraphrases?)"},
		{"neighbours over the bound", "{paraphrases: true, neighbours: 1000}", "nearby.neighbours must be 1..100"},
		{"max_records negative", "{paraphrases: true, max_records: -1}", "nearby.max_records must be 1..10000"},
		{"control_queries over the bound", "{control_queries: 101}", "nearby.control_queries must be 0..100"},
		{"quote_fraction negative", "{quotes: true, quote_fraction: -0.1}", "nearby.quote_fraction must be more than 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, "version: 1\nstores:\n  - name: d\n    type: sqlite-doc\n    path: d.db\n    nearby: "+tc.nearby+"\n")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
