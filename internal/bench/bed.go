package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
)

// bed is one store type's corpus, ready for cells: ingested once into a
// template that each cell copies, or, for targets whose files cannot be
// copied (tg.fresh), ingested again for each cell.
type bed struct {
	typ     string
	tg      *target
	c       *Corpus
	work    string
	tmpl    string
	records int // records the corpus makes in this store
}

// openBed makes o's corpus for store type typ and, unless the target is
// fresh, ingests it into the template.
func openBed(ctx context.Context, typ string, o Options) (*bed, error) {
	tg, ok := targets[typ]
	if !ok {
		return nil, fmt.Errorf("bench: no residue target for store type %q", typ)
	}
	b := &bed{typ: typ, tg: tg, c: NewCorpus(o.Seed, o.Subjects, o.DocsEach), work: filepath.Join(o.Work, typ)}
	b.tmpl = filepath.Join(b.work, "template")
	b.records = corpusRecords(tg, b.c)
	if !tg.fresh {
		logf(o, "%s: ingesting %d documents of %d subjects", typ, len(b.c.Docs), len(b.c.Subjects))
		if _, err := setup(ctx, tg, b.c, b.tmpl); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// provenance is what a results file of b records about the code, the
// machine and, for a store with a server, the server's settings.
func (b *bed) provenance(ctx context.Context) (provenance.Provenance, error) {
	p := provenance.Capture(provenance.ResiduePaths)
	if b.tg.server != nil {
		set, err := provenance.PostgresSettings(ctx, b.tg.server())
		if err != nil {
			return p, fmt.Errorf("%s: %w", b.typ, err)
		}
		p.ServerSettings = set
	}
	return p, nil
}

// cell runs baseline id for subjects on a fresh copy of the corpus, in the
// directory name, removed afterwards.
func (b *bed) cell(ctx context.Context, name, id string, subjects []int) (*Cell, error) {
	dir := filepath.Join(b.work, name)
	if b.tg.fresh {
		if _, err := setup(ctx, b.tg, b.c, dir); err != nil {
			return nil, err
		}
	} else if err := copyDir(b.tmpl, dir); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return runCell(ctx, b.tg, b.c, dir, id, subjects)
}

// corpusRecords is how many records the corpus makes in tg's store: a
// document and each of its chunks are a record each where the store keeps
// them apart.
func corpusRecords(tg *target, c *Corpus) int {
	n := 0
	for _, d := range c.Docs {
		n += len(tg.keys(d))
	}
	return n
}
