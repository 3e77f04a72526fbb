package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/amnesia-dev/amnesia/store"
)

// options turns a configured store into Options.
func options(c store.Config) (Options, error) {
	o := Options{Name: c.Name, Addr: c.DSN, Layout: c.Preset, Mapping: c.Mapping, DataDir: c.DataDir, Dimensions: c.Dimensions}
	if c.Preset == "" {
		o.Layout = c.Schema
	}
	o.Prefix = c.Table
	switch c.Reclaim {
	case "", "full":
	case "delete-only":
		o.DeleteOnly = true
	default:
		return o, fmt.Errorf("reclaim %q: use full (default) or delete-only", c.Reclaim)
	}
	w, err := parseWait(c.ReclaimWait)
	if err != nil {
		return o, err
	}
	o.ReclaimWait = w
	if _, err := parseAddr(c.DSN); err != nil {
		return o, redactErr(err, c.DSN)
	}
	if _, err := resolveLayout(o); err != nil {
		return o, err
	}
	return o, nil
}

func redactErr(err error, dsn string) error {
	if dsn == "" {
		return err
	}
	return errors.New(redactURL(err.Error(), dsn))
}

// Check implements store.CheckFunc: the configuration is usable, the server
// answers PING and INFO persistence, and data_dir, when set, is the
// server's directory (CONFIG GET dir, when the server allows it) and
// readable; without data_dir the physical level cannot be measured (a
// warning). It reads no key.
func Check(ctx context.Context, c store.Config) []store.Problem {
	var ps []store.Problem
	add := func(sev store.Severity, key, format string, a ...any) {
		ps = append(ps, store.Problem{Severity: sev, Key: key, Message: fmt.Sprintf(format, a...)})
	}
	o, err := options(c)
	if err != nil {
		add(store.SeverityError, "", "%v", err)
		return ps
	}
	co, _ := parseAddr(o.Addr)
	co.Protocol, co.DisableIdentity = 2, true
	co.DialTimeout = 5 * time.Second
	cl := goredis.NewClient(co)
	defer cl.Close()
	loc := location(co)
	if err := cl.Ping(ctx).Err(); err != nil {
		add(store.SeverityError, "dsn", "Redis at %s does not answer PING: %v (is the server running, and the address, password and db right?)", loc, redactErr(err, c.DSN))
		return ps
	}
	if err := cl.Info(ctx, "persistence").Err(); err != nil {
		add(store.SeverityError, "dsn", "Redis at %s refuses INFO persistence (%v): the reclaim waits on it; grant +info to this user", loc, err)
	}
	if o.DataDir == "" {
		add(store.SeverityWarning, "data_dir", "not set: the AOF and RDB of %s cannot be read, so the physical level stays UNVERIFIED; set data_dir to the server's directory (CONFIG GET dir), readable by amnesia", loc)
		return ps
	}
	if fi, err := os.Stat(o.DataDir); err != nil || !fi.IsDir() {
		add(store.SeverityError, "data_dir", "%s is not a readable directory: set data_dir to the Redis server's directory (CONFIG GET dir)", o.DataDir)
		return ps
	}
	if _, err := os.ReadDir(o.DataDir); err != nil {
		add(store.SeverityError, "data_dir", "%s cannot be listed (%v): amnesia must be able to read the server's AOF and RDB", o.DataDir, err)
		return ps
	}
	m, err := cl.ConfigGet(ctx, "dir").Result()
	if err != nil || m["dir"] == "" {
		add(store.SeverityWarning, "data_dir", "CONFIG GET dir is refused at %s: amnesia cannot confirm that %s is the server's directory", loc, o.DataDir)
		return ps
	}
	if !sameDir(m["dir"], o.DataDir) {
		add(store.SeverityWarning, "data_dir", "Redis at %s writes its files to %s, data_dir is %s: unless the server's directory is mounted there, the physical probe reads the wrong files", loc, m["dir"], o.DataDir)
	}
	return ps
}

func sameDir(a, b string) bool {
	ca, err1 := filepath.EvalSymlinks(a)
	cb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ca == cb
}

// quiet drops go-redis's own log lines (a failed dial, a pool message):
// the adapter returns every error it acts on, with the server's address
// and never its password, and amnesia's output stays its own.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() {
	goredis.SetLogger(quiet{})
	store.RegisterCheck(Type, []string{"name", "type", "dsn", "table", "schema", "preset", "mapping", "dimensions", "reclaim", "reclaim_wait", "data_dir"}, Check)
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			o, err := options(c)
			if err != nil {
				return nil, fmt.Errorf("open redis store %q: %w", c.Name, err)
			}
			return Open(ctx, o)
		},
		Validate: func(c store.Config) error {
			_, err := options(c)
			return err
		},
		Location: func(c store.Config) string {
			co, err := parseAddr(c.DSN)
			if err != nil {
				return "redis (dsn not parsed)"
			}
			return location(co)
		},
	})
}
