package state

import (
	"strings"
	"testing"
	"time"
)

func TestServeConfig(t *testing.T) {
	c, err := parseConfig([]byte("version: 1\nserve:\n  listen: 127.0.0.1:9000\n  max_body: 64KiB\n  rate: 120/m\n  due: 48h\n  webhook_secret: s3cret\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Serve
	if s.ListenAddr() != "127.0.0.1:9000" || s.MaxBodyBytes() != 64<<10 || s.RatePerSecond() != 2 || s.DueDuration() != 48*time.Hour || s.WebhookSecret != "s3cret" {
		t.Fatalf("serve config = %+v", s)
	}
	d, err := parseConfig([]byte("version: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Serve.ListenAddr() != DefaultServeListen || d.Serve.MaxBodyBytes() != 1<<20 || d.Serve.RatePerSecond() != 50 || d.Serve.DueDuration() != 720*time.Hour {
		t.Fatalf("defaults = %+v", d.Serve)
	}
	if b, _ := d.Marshal(); strings.Contains(string(b), "serve") {
		t.Fatalf("an unset serve section is written out:\n%s", b)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"serve:\n  listen: nope\n", "line 3: serve.listen"},
		{"serve:\n  max_body: huge\n", "line 3: serve.max_body"},
		{"serve:\n  rate: 5/h\n", "line 3: serve.rate"},
		{"serve:\n  due: -1h\n", "line 3: serve.due"},
		{"serve:\n  due: 745h\n", "serve.due \"745h\": at most 744h0m0s"},
		{"serve:\n  tls_cert: a.pem\n", "tls_cert and tls_key go together"},
		{"serve:\n  lisen: x\n", "unknown key lisen in serve (did you mean listen?)"},
	} {
		_, err := parseConfig([]byte("version: 1\n" + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to say %q", tc.yaml, err, tc.want)
		}
	}
}
