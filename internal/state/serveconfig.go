package state

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ServeConfig is the serve: section of amnesia.yaml, read by `amnesia serve`.
// Every key is optional; the defaults are a loopback listener without TLS.
type ServeConfig struct {
	// Listen is the host:port of the HTTP API (default 127.0.0.1:7468).
	Listen string `yaml:"listen,omitempty"`
	// TLSCert and TLSKey are PEM files; serve speaks TLS when both are set.
	TLSCert string `yaml:"tls_cert,omitempty"`
	TLSKey  string `yaml:"tls_key,omitempty"`
	// MaxBody limits a request body: bytes, or with a unit (KiB, MiB).
	// Default 1MiB.
	MaxBody string `yaml:"max_body,omitempty"`
	// Rate limits each token: "<n>/s" or "<n>/m" (burst n). Default 50/s.
	Rate string `yaml:"rate,omitempty"`
	// Due is the due date of a request created without one, from when it
	// was received (Go duration; default 720h, one month).
	Due string `yaml:"due,omitempty"`
	// WebhookSecret is the HMAC secret of the intake endpoint and of the
	// callbacks (write $AMNESIA_WEBHOOK_SECRET to keep it out of the file).
	// Empty: the intake endpoint refuses every request.
	WebhookSecret string `yaml:"webhook_secret,omitempty"`
	// Metrics says who may read /metrics: "open" (default: no token) or
	// "token" (any valid token).
	Metrics string `yaml:"metrics,omitempty"`

	maxBody int64
	rate    float64
	due     time.Duration
}

// ListenAddr is the address to listen on (default 127.0.0.1:7468).
func (s *ServeConfig) ListenAddr() string {
	if s.Listen == "" {
		return DefaultServeListen
	}
	return s.Listen
}

// Serve defaults.
const (
	DefaultServeListen  = "127.0.0.1:7468"
	DefaultServeMaxBody = 1 << 20
	DefaultServeRate    = 50.0
	DefaultServeDue     = 720 * time.Hour
)

func (s *ServeConfig) validate() error {
	if _, _, err := net.SplitHostPort(s.ListenAddr()); err != nil {
		return fieldErr("serve.listen", "serve.listen %q: want host:port, e.g. 127.0.0.1:7468", s.Listen)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return fieldErr("serve.tls_cert", "serve: tls_cert and tls_key go together: set both (PEM files) for TLS, or neither")
	}
	s.maxBody = DefaultServeMaxBody
	if s.MaxBody != "" {
		n, err := ParseSize(s.MaxBody)
		if err != nil || n < 1024 {
			return fieldErr("serve.max_body", "serve.max_body %q: want a size of at least 1KiB, e.g. 1MiB, 512KiB or 1048576", s.MaxBody)
		}
		s.maxBody = n
	}
	s.rate = DefaultServeRate
	if s.Rate != "" {
		r, err := parseRate(s.Rate)
		if err != nil {
			return fieldErr("serve.rate", "serve.rate %q: want requests per second or minute, e.g. 50/s or 600/m", s.Rate)
		}
		s.rate = r
	}
	s.due = DefaultServeDue
	if s.Due != "" {
		d, err := time.ParseDuration(s.Due)
		if err != nil || d <= 0 {
			return fieldErr("serve.due", "serve.due %q: want a positive Go duration such as 720h", s.Due)
		}
		if d > MaxErasureDeadline {
			return fieldErr("serve.due", "serve.due %q: at most %s (one month, GDPR Art. 12(3)): a request's due date further away would be refused when it is queued", s.Due, MaxErasureDeadline)
		}
		s.due = d
	}
	switch s.Metrics {
	case "", "open", "token":
	default:
		return fieldErr("serve.metrics", "serve.metrics %q: want open or token", s.Metrics)
	}
	return nil
}

// ParseSize parses a byte size: a whole number, optionally followed by B,
// KiB, MiB or GiB (KB, MB, GB are read as their binary multiples too).
func ParseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("size %q: want a whole number of bytes, KiB or MiB", v)
	}
	return n * mult, nil
}

func parseRate(v string) (float64, error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(v), "/")
	if !ok {
		return 0, fmt.Errorf("rate %q: want n/s or n/m", v)
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("rate %q: want a positive number", v)
	}
	switch unit {
	case "s":
		return n, nil
	case "m":
		return n / 60, nil
	}
	return 0, fmt.Errorf("rate %q: want n/s or n/m", v)
}

// MaxBodyBytes is the request body limit.
func (s *ServeConfig) MaxBodyBytes() int64 {
	if s.maxBody == 0 {
		return DefaultServeMaxBody
	}
	return s.maxBody
}

// RatePerSecond is each token's rate limit (burst: the same number, at least 1).
func (s *ServeConfig) RatePerSecond() float64 {
	if s.rate == 0 {
		return DefaultServeRate
	}
	return s.rate
}

// DueDuration is the default due date of a request, from its receipt.
func (s *ServeConfig) DueDuration() time.Duration {
	if s.due == 0 {
		return DefaultServeDue
	}
	return s.due
}

// TLSFiles returns the certificate and key paths resolved against the
// configuration file's directory; empty when TLS is not configured.
func (c *Config) TLSFiles() (cert, key string) {
	s := c.Serve
	if s.TLSCert == "" {
		return "", ""
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) || c.dir == "" {
			return p
		}
		return filepath.Join(c.dir, p)
	}
	return abs(s.TLSCert), abs(s.TLSKey)
}
