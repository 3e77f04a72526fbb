package pinecone

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// APIVersion is the X-Pinecone-API-Version every request carries.
const APIVersion = "2025-04"

// client speaks Pinecone's data-plane HTTP API to one index. It never
// puts the API key anywhere but the Api-Key header: not in an error, not
// in a URL.
type client struct {
	base *url.URL
	key  string
	hc   *http.Client
}

// newHTTPClient returns a copy of base (a new client when nil, with
// timeout) that follows no redirect: Go forwards custom headers such as
// Api-Key to the redirect's target, whatever its host, so a redirect is
// answered as an error instead.
func newHTTPClient(base *http.Client, timeout time.Duration) *http.Client {
	hc := &http.Client{Timeout: timeout}
	if base != nil {
		c := *base
		hc = &c
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return hc
}

// parseHost returns the index host as a base URL: https, or http on a
// loopback address only (a local fake or proxy).
func parseHost(host string) (*url.URL, error) {
	if host == "" {
		return nil, errors.New("host is required: the index host from the Pinecone console or describe_index (https://<index>-<project>.svc.<region>.pinecone.io)")
	}
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return nil, errors.New("host is not a URL: give the index host, e.g. https://my-index-abc123.svc.us-east1-gcp.pinecone.io")
	}
	if u.User != nil {
		return nil, errors.New("host must not carry credentials: give the API key as api_key: $VAR")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback(u.Hostname()) {
			return nil, fmt.Errorf("host %s: plain http is allowed only on a loopback address; Pinecone's index hosts are https", u.Host)
		}
	default:
		return nil, fmt.Errorf("host %s: scheme %q: want https", u.Host, u.Scheme)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

func loopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// rpcStatus is Pinecone's data-plane error body.
type rpcStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// apiError is a non-2xx answer.
type apiError struct {
	Op      string
	Status  int
	Message string // Pinecone's message, shortened
}

func (e *apiError) Error() string {
	hint := ""
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = ": Pinecone refused the API key; check that the variable api_key names holds a key of the index's project with data-plane ReadWrite permission"
	case http.StatusNotFound:
		hint = ": check host (the index host, not api.pinecone.io) and namespace"
	}
	msg := e.Message
	if msg != "" {
		msg = ": " + msg
	}
	return fmt.Sprintf("pinecone %s: HTTP %d%s%s", e.Op, e.Status, msg, hint)
}

// retryable statuses: Pinecone asks clients to retry these with backoff.
func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// do sends one request (retrying 429 and 5xx three times with backoff) and
// decodes a 2xx JSON answer into out.
func (c *client) do(ctx context.Context, op, method, path string, q url.Values, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("pinecone %s: encode request: %w", op, err)
		}
	}
	u := *c.base
	u.Path += path
	if q != nil {
		u.RawQuery = q.Encode()
	}
	backoff := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pinecone %s: %w", op, err)
		}
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil {
			return fmt.Errorf("pinecone %s: %w", op, err)
		}
		req.Header.Set("Api-Key", c.key)
		req.Header.Set("X-Pinecone-API-Version", APIVersion)
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("pinecone %s: %w", op, ctx.Err())
			}
			// url.Error names the URL (host and path, never the key).
			return fmt.Errorf("pinecone %s: %w: %v", op, store.ErrUnavailable, err)
		}
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			if rerr != nil {
				return fmt.Errorf("pinecone %s: read answer: %w: %v", op, store.ErrUnavailable, rerr)
			}
			if out == nil {
				return nil
			}
			if err := json.Unmarshal(b, out); err != nil {
				return fmt.Errorf("pinecone %s: answer is not the JSON Pinecone sends: %v", op, err)
			}
			return nil
		}
		e := &apiError{Op: op, Status: resp.StatusCode}
		var st rpcStatus
		if json.Unmarshal(b, &st) == nil {
			e.Message = st.Message
		}
		if len(e.Message) > 200 {
			e.Message = e.Message[:200] + "…"
		}
		if retryable(resp.StatusCode) && attempt < 3 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("pinecone %s: %w", op, ctx.Err())
			case <-t.C:
			}
			backoff *= 2
			continue
		}
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			return fmt.Errorf("%w: %w", store.ErrBusy, e)
		case resp.StatusCode >= 500:
			return fmt.Errorf("%w: %w", store.ErrUnavailable, e)
		}
		return e
	}
}

// Wire types of the data-plane API.

type wireVector struct {
	ID       string         `json:"id"`
	Values   []float32      `json:"values"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

type fetchResponse struct {
	Vectors   map[string]wireVector `json:"vectors"`
	Namespace string                `json:"namespace"`
}

type queryRequest struct {
	Namespace       string         `json:"namespace,omitempty"`
	TopK            int            `json:"topK"`
	Filter          map[string]any `json:"filter,omitempty"`
	IncludeValues   bool           `json:"includeValues"`
	IncludeMetadata bool           `json:"includeMetadata"`
	Vector          []float32      `json:"vector,omitempty"`
}

type queryMatch struct {
	ID       string         `json:"id"`
	Score    float64        `json:"score"`
	Values   []float32      `json:"values"`
	Metadata map[string]any `json:"metadata"`
}

type queryResponse struct {
	Matches []queryMatch `json:"matches"`
}

type deleteRequest struct {
	IDs       []string       `json:"ids,omitempty"`
	Namespace string         `json:"namespace,omitempty"`
	Filter    map[string]any `json:"filter,omitempty"`
}

type listResponse struct {
	Vectors []struct {
		ID string `json:"id"`
	} `json:"vectors"`
	Pagination *struct {
		Next string `json:"next"`
	} `json:"pagination"`
}

// Stats is what describe_index_stats answers.
type Stats struct {
	Namespaces map[string]struct {
		VectorCount int `json:"vectorCount"`
	} `json:"namespaces"`
	Dimension        int     `json:"dimension"`
	IndexFullness    float64 `json:"indexFullness"`
	TotalVectorCount int     `json:"totalVectorCount"`
	Metric           string  `json:"metric"`
	VectorType       string  `json:"vectorType"`
}
