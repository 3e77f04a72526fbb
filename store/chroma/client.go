package chroma

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// Server is where a Chroma collection lives: the server's base URL, the
// tenant and the database, parsed from a store's dsn
// (http://host:port[?tenant=T&database=D]).
type Server struct {
	Base     string // scheme://host:port, no trailing slash
	Tenant   string
	Database string
}

// ParseDSN parses a store's dsn.
func ParseDSN(dsn string) (Server, error) {
	if dsn == "" {
		return Server{}, errors.New("dsn is required: the Chroma server's URL, e.g. http://127.0.0.1:8000 (add ?tenant=T&database=D for other than default_tenant/default_database)")
	}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Server{}, fmt.Errorf("dsn: want the Chroma server's URL, http(s)://host:port[?tenant=T&database=D]")
	}
	if u.User != nil {
		return Server{}, errors.New("dsn: credentials in the URL are not supported: run Chroma without authentication on a loopback or private address")
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		return Server{}, fmt.Errorf("dsn: give the server's root URL without a path (found /%s); tenant and database go in ?tenant=&database=", p)
	}
	q := u.Query()
	for k := range q {
		if k != "tenant" && k != "database" {
			return Server{}, fmt.Errorf("dsn: unknown parameter %q (known: tenant, database)", k)
		}
	}
	s := Server{Base: u.Scheme + "://" + u.Host, Tenant: q.Get("tenant"), Database: q.Get("database")}
	if s.Tenant == "" {
		s.Tenant = "default_tenant"
	}
	if s.Database == "" {
		s.Database = "default_database"
	}
	return s, nil
}

// Location names the server for people: host:port, tenant/database.
func (s Server) Location() string {
	return fmt.Sprintf("%s %s/%s", strings.TrimPrefix(strings.TrimPrefix(s.Base, "http://"), "https://"), s.Tenant, s.Database)
}

// client speaks Chroma's HTTP API v2.
type client struct {
	srv Server
	hc  *http.Client
}

func newClient(srv Server) *client {
	return &client{srv: srv, hc: &http.Client{Timeout: 5 * time.Minute}}
}

// apiError is a non-2xx answer. Its message is Chroma's error type and
// status only: Chroma's messages can echo ids and metadata values.
type apiError struct {
	Status int
	Kind   string
}

func (e *apiError) Error() string {
	if e.Kind != "" {
		return fmt.Sprintf("chroma answered %d %s", e.Status, e.Kind)
	}
	return fmt.Sprintf("chroma answered %d", e.Status)
}

func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && (ae.Status == http.StatusNotFound || strings.Contains(ae.Kind, "NotFound"))
}

func (c *client) collPath(name string) string {
	return fmt.Sprintf("/api/v2/tenants/%s/databases/%s/collections/%s", url.PathEscape(c.srv.Tenant), url.PathEscape(c.srv.Database), url.PathEscape(name))
}

func (c *client) collsPath() string {
	return fmt.Sprintf("/api/v2/tenants/%s/databases/%s/collections", url.PathEscape(c.srv.Tenant), url.PathEscape(c.srv.Database))
}

// do sends a request and decodes a JSON answer into out (when not nil). A
// server that cannot be reached is store.ErrUnavailable.
func (c *client) do(ctx context.Context, method, path string, in, out any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.srv.Base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: chroma at %s: %v", store.ErrUnavailable, c.srv.Location(), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%w: chroma at %s: read answer: %v", store.ErrUnavailable, c.srv.Location(), err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return &apiError{Status: resp.StatusCode, Kind: e.Error}
	}
	if out == nil || len(b) == 0 {
		return nil
	}
	// Numbers in metadata keep their text (1.0 stays a float when a
	// rebuild writes it back).
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("chroma %s %s: unexpected answer: %v", method, path[strings.LastIndex(path, "/")+1:], err)
	}
	return nil
}

// collection is what Chroma says about a collection.
type collection struct {
	ID            string         `json:"id"`
	Name          string         `json:"name"`
	Configuration map[string]any `json:"configuration_json"`
	Metadata      map[string]any `json:"metadata"`
	Dimension     *int           `json:"dimension"`
}

// space returns the collection's HNSW distance ("l2", "cosine", "ip").
func (c *collection) space() string {
	if h, ok := c.Configuration["hnsw"].(map[string]any); ok {
		if s, ok := h["space"].(string); ok {
			return s
		}
	}
	if s, ok := c.Metadata["hnsw:space"].(string); ok {
		return s
	}
	return "l2"
}

func (c *client) heartbeat(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/api/v2/heartbeat", nil, nil)
}

func (c *client) getCollection(ctx context.Context, name string) (*collection, error) {
	var out collection
	if err := c.do(ctx, http.MethodGet, c.collPath(name), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *client) createCollection(ctx context.Context, name string, configuration, metadata map[string]any) (*collection, error) {
	in := map[string]any{"name": name}
	if configuration != nil {
		in["configuration"] = configuration
	}
	if len(metadata) > 0 {
		in["metadata"] = metadata
	}
	var out collection
	if err := c.do(ctx, http.MethodPost, c.collsPath(), in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *client) renameCollection(ctx context.Context, id, newName string) error {
	return c.do(ctx, http.MethodPut, c.collPath(id), map[string]any{"new_name": newName}, nil)
}

func (c *client) deleteCollection(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, c.collPath(name), nil, nil)
}

// records is Chroma's answer to get (and the body of add/upsert).
type records struct {
	IDs        []string         `json:"ids"`
	Embeddings [][]float32      `json:"embeddings,omitempty"`
	Documents  []*string        `json:"documents,omitempty"`
	Metadatas  []map[string]any `json:"metadatas,omitempty"`
	URIs       []*string        `json:"uris,omitempty"`
}

func (c *client) get(ctx context.Context, collID string, in map[string]any) (*records, error) {
	var out records
	if err := c.do(ctx, http.MethodPost, c.collPath(collID)+"/get", in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *client) upsert(ctx context.Context, collID, op string, r *records) error {
	return c.do(ctx, http.MethodPost, c.collPath(collID)+"/"+op, r, nil)
}

func (c *client) count(ctx context.Context, collID string) (int, error) {
	var n int
	err := c.do(ctx, http.MethodGet, c.collPath(collID)+"/count", nil, &n)
	return n, err
}

func (c *client) delete(ctx context.Context, collID string, in map[string]any) (int, error) {
	var out struct {
		Deleted int `json:"deleted"`
	}
	err := c.do(ctx, http.MethodPost, c.collPath(collID)+"/delete", in, &out)
	return out.Deleted, err
}

type queryResult struct {
	IDs       [][]string         `json:"ids"`
	Distances [][]float64        `json:"distances"`
	Metadatas [][]map[string]any `json:"metadatas"`
}

func (c *client) query(ctx context.Context, collID string, qs [][]float32, k int, where map[string]any) (*queryResult, error) {
	in := map[string]any{"query_embeddings": qs, "n_results": k, "include": []string{"metadatas", "distances"}}
	if where != nil {
		in["where"] = where
	}
	var out queryResult
	if err := c.do(ctx, http.MethodPost, c.collPath(collID)+"/query", in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
