package pinecone

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// configOptions turns a configuration into Options.
func configOptions(c store.Config) (Options, error) {
	o := Options{Name: c.Name, Host: c.Host, APIKey: c.APIKey, Namespace: c.Namespace, Dimensions: c.Dimensions}
	if c.ConsistencyWait != "" {
		d, err := time.ParseDuration(c.ConsistencyWait)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("consistency_wait %q: want a positive Go duration such as 30s", c.ConsistencyWait)
		}
		o.ConsistencyWait = d
	}
	return o, nil
}

func validate(c store.Config) error {
	if _, err := parseHost(c.Host); err != nil {
		return err
	}
	if c.APIKey == "" {
		return errors.New("api_key is empty: write api_key: $PINECONE_API_KEY (any variable name) and export the key in that variable; never write the key itself into amnesia.yaml")
	}
	_, err := configOptions(c)
	return err
}

// Check implements store.CheckFunc: the host answers describe_index_stats
// with the configured key (counts and dimension only, no record), the
// dimension is the configured one, and the namespace holds vectors. It
// always warns that the physical level cannot be verified.
func Check(ctx context.Context, c store.Config) []store.Problem {
	bad := func(key, format string, a ...any) []store.Problem {
		return []store.Problem{{Severity: store.SeverityError, Key: key, Message: fmt.Sprintf(format, a...)}}
	}
	if err := validate(c); err != nil {
		return bad("", "%v", err)
	}
	o, _ := configOptions(c)
	u, _ := parseHost(o.Host)
	cl := &client{base: u, key: o.APIKey, hc: newHTTPClient(nil, 15*time.Second)}
	defer cl.hc.CloseIdleConnections()
	var st Stats
	if err := cl.do(ctx, "describe_index_stats", http.MethodPost, "/describe_index_stats", nil, struct{}{}, &st); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
			return bad("api_key", "%v", err)
		}
		return bad("host", "%s does not answer describe_index_stats: %v", u.Host, err)
	}
	var out []store.Problem
	if o.Dimensions > 0 && st.Dimension != o.Dimensions {
		out = append(out, store.Problem{Severity: store.SeverityError, Key: "dimensions", Message: fmt.Sprintf("the index at %s has %d dimensions, the configuration says %d", u.Host, st.Dimension, o.Dimensions)})
	}
	ns := o.Namespace
	_, ok := st.Namespaces[ns]
	if ns == "" {
		_, ok2 := st.Namespaces[defaultNamespace]
		ok = ok || ok2
	}
	if !ok {
		name := ns
		if name == "" {
			name = "the default namespace"
		}
		out = append(out, store.Problem{Severity: store.SeverityWarning, Key: "namespace", Message: fmt.Sprintf("the index at %s holds no vectors in %s (namespaces are created by the first upsert): is namespace right?", u.Host, name)})
	}
	out = append(out, store.Problem{Severity: store.SeverityWarning, Message: "Pinecone is a managed service: erasure is verified logically (fetch, list, filtered and similarity queries); the physical level is always " + StateManaged + ", citing " + DeletionCommitmentURL})
	return out
}

// defaultNamespace is the name describe_index_stats gives the default
// namespace in recent API versions.
const defaultNamespace = "__default__"

func init() {
	store.RegisterCheck(Type, []string{"name", "type", "host", "api_key", "namespace", "dimensions", "consistency_wait", "out_of_scope"}, Check)
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			o, err := configOptions(c)
			if err != nil {
				return nil, err
			}
			return Open(ctx, o)
		},
		Validate: validate,
		Location: Location,
		List:     list,
		Proof:    proof,
	})
}
