package pgvector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

// Put inserts or replaces a record (a replace is a delete and an insert in
// one transaction, in the mapped collections). It writes the row as each
// framework writes it: the default layout; LangChain's (langchain_community's
// uuid and custom_id, langchain-postgres's id, langchaingo's uuid), with
// collection_id the uuid of the one collection the mapping names (or
// r.Collection); LlamaIndex's PGVectorStore (node_id, text, metadata_ from
// node_to_metadata_dict with remove_text: the metadata, _node_content,
// _node_type and the three document ids from metadata "ref_doc_id").
// A mapping that moves the subject out of one key of a JSON column is
// written by its framework, not by amnesia.
func (s *Store) Put(ctx context.Context, r Record) error {
	var b pgx.Batch
	if err := s.queuePut(ctx, &b, r); err != nil {
		return err
	}
	if err := s.db.SendTx(ctx, &b); err != nil {
		return fmt.Errorf("put vector: %w", err)
	}
	return nil
}

// PutBatch inserts or replaces vectors in one transaction (one round
// trip): all of them or, on an error, none. A vector whose id comes twice
// is written as the last one says, as Puts in that order would.
func (s *Store) PutBatch(ctx context.Context, rs []Record) error {
	var b pgx.Batch
	for _, r := range rs {
		if err := s.queuePut(ctx, &b, r); err != nil {
			return err
		}
	}
	if len(rs) == 0 {
		return nil
	}
	if err := s.db.SendTx(ctx, &b); err != nil {
		return fmt.Errorf("put vectors: %w", err)
	}
	return nil
}

// queuePut checks r as Put does and queues the statements that replace it
// (a delete of the key, then an insert) in b.
func (s *Store) queuePut(ctx context.Context, b *pgx.Batch, r Record) error {
	if r.ID == "" {
		return errors.New("put vector: empty id")
	}
	if len(r.Embedding) == 0 || s.dim != 0 && len(r.Embedding) != s.dim {
		return fmt.Errorf("put vector: %d dimensions, store has %d", len(r.Embedding), s.dim)
	}
	if !s.writable() {
		return fmt.Errorf("put vector: the %s layout with the subject in %s is written by its framework, not by amnesia (amnesia writes the subject tag into one key of a JSON column)", s.lay.label(), s.lay.Subject.String())
	}
	meta := map[string]any{}
	for k, v := range r.Metadata {
		meta[k] = v
	}
	if r.Subject != "" {
		meta[s.lay.Subject.Path[0]] = r.Subject
	}
	if s.lay.preset == PresetLlamaIndex {
		llamaIndexMetadata(meta, r.ID)
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("put vector: metadata: %w", err)
	}
	t := s.tbl.Ident()
	mcol, content, vcol := pg.Quote(s.lay.Subject.JSON), pg.Quote(s.lay.Content[0]), pg.Quote(s.lay.vector)
	var ins string
	var a pg.Args
	if s.lay.langchain() {
		var coll any
		if r.Collection != "" {
			coll = r.Collection
		} else if len(s.lay.Collections) > 0 {
			if coll, err = s.collectionID(ctx); err != nil {
				return fmt.Errorf("put vector: %w", err)
			}
		}
		cols := "collection_id, " + vcol + ", " + content + ", " + mcol
		vals := a.Add(coll) + "::uuid, " + a.Add(vectorText(r.Embedding)) + "::text::vector, " + a.Add(r.Content) + ", " + a.Add(string(mj)) + "::text::" + s.metaType()
		switch s.lay.Keys[0] {
		case "uuid":
			u, isUUID := canonicalUUID(r.ID)
			if !isUUID && len(s.lay.Keys) == 1 {
				return errors.New("put vector: this langchain table has no custom_id column, so keys must be uuids")
			}
			var uuid any
			if isUUID {
				uuid = u
			}
			cols, vals = "uuid, "+cols, "COALESCE("+a.Add(uuid)+"::uuid, gen_random_uuid()), "+vals
			if len(s.lay.Keys) > 1 {
				cols, vals = cols+", custom_id", vals+", "+a.Add(r.ID)
			}
		default:
			cols, vals = pg.Quote(s.lay.Keys[0])+", "+cols, a.Add(r.ID)+", "+vals
		}
		ins = `INSERT INTO ` + t + ` (` + cols + `) VALUES (` + vals + `)`
	} else {
		ins = `INSERT INTO ` + t + ` (` + pg.Quote(s.lay.Keys[0]) + `, ` + vcol + `, ` + content + `, ` + mcol + `) VALUES (` +
			a.Add(r.ID) + `, ` + a.Add(vectorText(r.Embedding)) + `::text::vector, ` + a.Add(r.Content) + `, ` + a.Add(string(mj)) + `::text::` + s.metaType() + `)`
	}
	var w pg.Args
	where := s.lay.Where(&w, []string{r.ID})
	b.Queue(`DELETE FROM `+t+` WHERE `+where, w...)
	b.Queue(ins, a...)
	return nil
}

// writable reports whether Put can write the layout: the subject tag goes
// into one key of a JSON column, and the key is a column Put can fill.
func (s *Store) writable() bool {
	if s.lay.Subject.JSON == "" || len(s.lay.Subject.Path) != 1 || len(s.lay.Content) == 0 {
		return false
	}
	switch s.lay.preset {
	case PresetDefault:
		return true
	case PresetLangChain, PresetLangChainGo:
		return true
	case PresetLlamaIndex:
		return len(s.lay.Keys) == 1 && s.lay.Keys[0] == "node_id" && s.lay.Subject.JSON == "metadata_"
	}
	return false
}

// LlamaIndexKeys are the metadata_ keys LlamaIndex's node_to_metadata_dict
// adds beside the node's own metadata; capture writes them and does not
// return them as metadata.
var LlamaIndexKeys = []string{"_node_content", "_node_type", "document_id", "doc_id", "ref_doc_id"}

// llamaIndexMetadata adds to meta (the node's metadata, subject tag
// included) what LlamaIndex's PGVectorStore writes into metadata_ for a
// TextNode (node_to_metadata_dict(node, remove_text=True,
// flat_metadata=False)): _node_content, the node as JSON without its text
// and embedding; _node_type; and document_id, doc_id and ref_doc_id, the
// source document's id (meta["ref_doc_id"], null when there is none).
func llamaIndexMetadata(meta map[string]any, nodeID string) {
	ref, _ := meta["ref_doc_id"].(string)
	own := map[string]any{}
	for k, v := range meta {
		if k != "ref_doc_id" {
			own[k] = v
		}
	}
	rel := map[string]any{}
	var refv any
	if ref != "" {
		refv = ref
		rel["1"] = map[string]any{"node_id": ref, "node_type": "4", "metadata": map[string]any{}, "hash": nil, "class_name": "RelatedNodeInfo"}
	}
	node := map[string]any{"id_": nodeID, "embedding": nil, "metadata": own,
		"excluded_embed_metadata_keys": []string{}, "excluded_llm_metadata_keys": []string{}, "relationships": rel,
		"metadata_template": "{key}: {value}", "text": "", "mimetype": "text/plain",
		"start_char_idx": nil, "end_char_idx": nil, "metadata_seperator": "\n", "text_template": "{metadata_str}\n\n{content}",
		"class_name": "TextNode"}
	nc, _ := json.Marshal(node)
	meta["_node_content"] = string(nc)
	meta["_node_type"] = "TextNode"
	meta["document_id"], meta["doc_id"], meta["ref_doc_id"] = refv, refv, refv
}

// collectionID returns the uuid of the one collection the mapping names,
// as LangChain and langchaingo write it into collection_id.
func (s *Store) collectionID(ctx context.Context) (string, error) {
	if len(s.lay.Collections) != 1 {
		return "", fmt.Errorf("the mapping names %d collections: give Record.Collection (the collection's uuid) to say which one the row belongs to", len(s.lay.Collections))
	}
	t, err := pg.ParseTable(s.lay.CollTable)
	if err != nil {
		return "", err
	}
	var id string
	err = s.db.With(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT uuid::text FROM `+t.Ident()+` WHERE name::text = $1`, s.lay.Collections[0]).Scan(&id)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("collection %q is not in %s: create it with the framework first (LangChain and langchaingo create it on their first add)", s.lay.Collections[0], t)
	}
	if err != nil {
		return "", fmt.Errorf("look up collection %q: %w", s.lay.Collections[0], err)
	}
	return id, nil
}

// metaType is the subject's JSON column's type as a cast target.
func (s *Store) metaType() string {
	if s.metaJSON {
		return "json"
	}
	return "jsonb"
}

// row is one selected record with the keys it answers to.
type row struct {
	ids      []string
	contents []string
	Record
}

func (s *Store) selectList() string {
	cs := make([]string, len(s.lay.Content))
	for i, c := range s.lay.Content {
		cs[i] = "COALESCE(" + pg.Quote(c) + "::text, '')"
	}
	meta := "'{}'"
	if s.lay.Subject.JSON != "" {
		meta = "COALESCE(" + pg.Quote(s.lay.Subject.JSON) + "::text, '{}')"
	}
	parent := "''"
	if s.lay.Parent != nil {
		parent = "COALESCE(" + s.lay.Parent.Expr() + ", '')"
	}
	return s.lay.IDs() + `, ` + pg.Quote(s.lay.vector) + `::text, ARRAY[` + strings.Join(cs, ", ") + `]::text[], ` + meta +
		`, COALESCE(` + s.lay.Subject.Expr() + `, ''), ` + parent
}

func scanRow(r pgx.CollectableRow) (row, error) {
	var x row
	var vec, meta *string
	if err := r.Scan(&x.ids, &vec, &x.contents, &meta, &x.Subject, &x.Parent); err != nil {
		return x, err
	}
	if vec != nil {
		v, err := parseVector(*vec)
		if err != nil {
			return x, err
		}
		x.Embedding = v
	}
	if len(x.contents) > 0 {
		x.Content = x.contents[0]
	}
	if meta != nil {
		if err := json.Unmarshal([]byte(*meta), &x.Metadata); err != nil {
			return x, fmt.Errorf("parse metadata: %w", err)
		}
	}
	if len(x.ids) > 0 {
		x.ID = x.ids[len(x.ids)-1] // custom_id when there is one
	}
	return x, nil
}

func (s *Store) query(ctx context.Context, tail string, a pg.Args) ([]row, error) {
	var out []row
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT `+s.selectList()+` FROM `+s.tbl.Ident()+` `+tail, a...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanRow)
		return err
	})
	return out, err
}

// Get returns the record with key id in the mapped collections, or nil.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	r, err := s.get(ctx, id)
	if r == nil || err != nil {
		return nil, err
	}
	return &r.Record, nil
}

// rowsOf returns, for each of keys that rows of the mapped collections
// answer to, every such row, ordered by the ids they answer to (the same
// order on every read), read with one query for all of the keys. A row that
// answers to several of the keys is each one's.
func (s *Store) rowsOf(ctx context.Context, keys []string) (map[string][]*row, error) {
	out := map[string][]*row{}
	if len(keys) == 0 {
		return out, nil
	}
	var a pg.Args
	rs, err := s.query(ctx, `WHERE `+s.lay.Where(&a, keys)+` ORDER BY `+s.lay.IDs(), a)
	if err != nil {
		return nil, fmt.Errorf("get vectors: %w", err)
	}
	return pg.ByKey(keys, rs, func(r *row) []string { return r.ids }), nil
}

func (s *Store) get(ctx context.Context, id string) (*row, error) {
	var a pg.Args
	rs, err := s.query(ctx, `WHERE `+s.lay.Where(&a, []string{id})+` LIMIT 1`, a)
	if err != nil {
		return nil, fmt.Errorf("get vector: %w", err)
	}
	if len(rs) == 0 {
		return nil, nil
	}
	return &rs[0], nil
}

// BySubject returns the keys of the records tagged with subject in the
// mapped collections; a record in the langchain_community layout answers to
// its uuid and custom_id.
func (s *Store) BySubject(ctx context.Context, subject string) ([][]string, error) {
	var out [][]string
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		var a pg.Args
		cond := s.lay.Subject.Expr() + ` = ` + a.Add(subject) + ` AND ` + s.lay.Scope(&a)
		rows, err := c.Query(ctx, `SELECT `+s.lay.IDs()+` FROM `+s.tbl.Ident()+` WHERE `+cond, a...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[[]string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("query vectors: %w", err)
	}
	return out, nil
}

// Neighbor is one search result.
type Neighbor struct {
	ID       string
	Subject  string
	Distance float64
	ids      []string
}

// Search returns the k nearest records to q by L2 distance, nearest first.
// With exact true the vector index is not used (a sequential scan: every
// row is compared); otherwise the planner may use an approximate index.
func (s *Store) Search(ctx context.Context, q []float32, k int, exact bool) ([]Neighbor, error) {
	return s.search(ctx, q, k, "<->", exact)
}

func (s *Store) search(ctx context.Context, q []float32, k int, op string, exact bool) ([]Neighbor, error) {
	if s.dim != 0 && len(q) != s.dim {
		return nil, fmt.Errorf("search vectors: %d dimensions, store has %d", len(q), s.dim)
	}
	a := pg.Args{vectorText(q), k}
	vcol := pg.Quote(s.lay.vector)
	where := `WHERE ` + vcol + ` IS NOT NULL AND ` + s.lay.Scope(&a)
	if s.dim == 0 { // a column without fixed dimensions may mix sizes
		where += fmt.Sprintf(` AND vector_dims(%s) = %d`, vcol, len(q))
	}
	qs := `SELECT ` + s.lay.IDs() + `, COALESCE(` + s.lay.Subject.Expr() + `, ''), (` + vcol + ` ` + op + ` $1::text::vector)::float8 AS d FROM ` +
		s.tbl.Ident() + ` ` + where + ` ORDER BY ` + vcol + ` ` + op + ` $1::text::vector LIMIT $2`
	var out []Neighbor
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			settings := []string{"SET LOCAL enable_seqscan = off"}
			if exact {
				settings = []string{"SET LOCAL enable_indexscan = off", "SET LOCAL enable_bitmapscan = off"}
			}
			for _, q := range settings {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
			rows, err := tx.Query(ctx, qs, a...)
			if err != nil {
				return err
			}
			out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Neighbor, error) {
				var n Neighbor
				err := r.Scan(&n.ids, &n.Subject, &n.Distance)
				if len(n.ids) > 0 {
					n.ID = n.ids[len(n.ids)-1]
				}
				return n, err
			})
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("search vectors: %w", err)
	}
	return out, nil
}
