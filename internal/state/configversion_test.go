package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/lineage"
)

// configured is a host configuration sharing ledger and secrets, with two
// stores: a PostgreSQL one whose DSN carries password, and a SQLite one.
func configured(ledger, pepper, key, password, docsPath string) *Config {
	c := withSecrets(ledger, pepper, key)
	c.Stores = []StoreConfig{
		{Name: "chats", Type: "postgres", DSN: "postgres://app:" + password + "@db.internal:5432/app?sslmode=disable", Table: "chat_turns"},
		{Name: "docs", Type: "sqlite-doc", Path: docsPath},
	}
	return c
}

// With a PostgreSQL ledger, the installation-wide part of every host's
// amnesia.yaml must be the configuration version the ledger records: the
// first host records it; a host with another store setting is refused,
// with the store named; a host with the same configuration (and its own
// secrets' sources, serve section and DSN password) starts; after
// `config publish` of a new configuration, a host with the earlier one is
// refused. The ledger holds digests only. With a SQLite ledger nothing is
// recorded or compared.
func TestConfigVersionInTheLedger(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	ledger := pgtest.DB(t)
	pepper, key := "dir:"+filepath.Join(root, "s", "pepper"), "dir:"+filepath.Join(root, "s", "key")
	docs := filepath.Join(root, "docs.db")

	a := mustHost(t, configured(ledger, pepper, key, "pw-host-a-7731", docs))

	// The same installation-wide configuration, another password in the
	// store's DSN and another serve section: accepted.
	same := configured(ledger, pepper, key, "pw-host-b-9142", docs)
	same.Serve.Listen = "0.0.0.0:9000"
	b, err := host(t, same)
	if err != nil {
		t.Fatalf("a host with the installation's configuration is refused: %v", err)
	}

	// Another path for store docs: refused, the store named.
	other := configured(ledger, pepper, key, "pw-host-a-7731", filepath.Join(root, "elsewhere.db"))
	c, err := host(t, other)
	if !errors.Is(err, ErrConfigMismatch) {
		t.Fatalf("a host with another store setting: got %v, want ErrConfigMismatch", err)
	}
	if !strings.Contains(err.Error(), "stores.docs") || strings.Contains(err.Error(), "stores.chats") {
		t.Fatalf("the refusal does not name exactly the differing store: %v", err)
	}
	if strings.Contains(err.Error(), "elsewhere") || strings.Contains(err.Error(), "pw-host") {
		t.Fatalf("the refusal prints a value: %v", err)
	}

	// Host C publishes its configuration: it is version 2; host A, with the
	// earlier one, is refused now; host C is accepted.
	l, err := c.OpenLedger(ctx, LedgerConfigPublish)
	if err != nil {
		t.Fatal(err)
	}
	now, was, err := c.PublishConfig(ctx, l)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	if was == nil || was.Version != 1 || now.Version != 2 || now.Digest != other.ConfigDigest() {
		t.Fatalf("publish: now %+v, was %+v", now, was)
	}
	if _, err := a.OpenLedger(ctx, LedgerChecked); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("host A after the publication of version 2: got %v, want ErrConfigMismatch naming version 2", err)
	}
	if _, err := b.OpenLedger(ctx, LedgerChecked); !errors.Is(err, ErrConfigMismatch) {
		t.Fatalf("host B after the publication of version 2: got %v, want ErrConfigMismatch", err)
	}
	l, err = c.OpenLedger(ctx, LedgerChecked)
	if err != nil {
		t.Fatalf("the publishing host is refused: %v", err)
	}
	v, ok, err := l.(lineage.InstallationMeta).InstallationValue(ctx, configKey)
	l.Close()
	if err != nil || !ok {
		t.Fatalf("no configuration version in the ledger: %v", err)
	}
	for _, s := range []string{"pw-host", "db.internal", "elsewhere", "chat_turns"} {
		if strings.Contains(v, s) {
			t.Fatalf("the ledger's configuration version holds %q: %s", s, v)
		}
	}

	// A SQLite ledger: no configuration version, hosts not compared.
	sq := filepath.Join(root, "ledger.db")
	s1 := mustHost(t, configured(sq, pepper, key, "x", docs))
	s2, err := host(t, configured(sq, pepper, key, "x", filepath.Join(root, "elsewhere.db")))
	if err != nil {
		t.Fatalf("SQLite ledger: a second configuration is refused: %v", err)
	}
	for _, d := range []*Dir{s1, s2} {
		l, err := d.OpenLedger(ctx, LedgerChecked)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := l.(lineage.InstallationMeta).InstallationValue(ctx, configKey); ok {
			t.Fatal("a SQLite ledger records a configuration version")
		}
		if _, _, err := d.PublishConfig(ctx, l); err == nil {
			t.Fatal("config publish with a SQLite ledger succeeded")
		}
		l.Close()
	}
	if _, err := os.Stat(sq); err != nil {
		t.Fatal(err)
	}
}

// Every field of Config is either compared across hosts (SharedSections)
// or per host by decision: a field added later without a decision fails
// here, instead of silently never being compared.
func TestEveryConfigFieldClassified(t *testing.T) {
	shared := map[string]string{ // field → section
		"Version": "version", "Scope": "scope", "Validity": "certificate_validity", "Stores": "stores",
		"LogOrigin": "log_origin", "TSA": "tsa", "TSATimeout": "tsa", "ReclaimWait": "reclaim_wait",
		"Reverify": "reverify", "Erasure": "erasure", "Models": "models",
	}
	perHost := map[string]bool{"Ledger": true, "Secrets": true, "Serve": true}
	sections := DefaultConfig().SharedSections()
	typ := reflect.TypeOf(Config{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		if sec, ok := shared[f.Name]; ok {
			if _, ok := sections[sec]; !ok {
				t.Errorf("Config.%s: section %q is not in SharedSections", f.Name, sec)
			}
			continue
		}
		if !perHost[f.Name] {
			t.Errorf("Config.%s is neither compared across hosts (SharedSections) nor listed as per host: decide, and document it in docs/scale.md", f.Name)
		}
	}
	// A change of the erasure policy changes its section's digest.
	c := DefaultConfig()
	c.Erasure.Deadline = "240h"
	if c.SharedSections()["erasure"] == sections["erasure"] {
		t.Fatal("the erasure section's digest does not depend on its settings")
	}
}

// No password setting of a DSN reaches the digest, however it is written;
// everything else of the DSN counts.
func TestDSNWithoutPassword(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://app:s3cret@db:5432/app?sslmode=disable", "postgres://app@db:5432/app?sslmode=disable"},
		{"postgres://app@db/app?password=s3cret&sslpassword=k3y&sslmode=require", "postgres://app@db/app?sslmode=require"},
		{"host=db user=app password=s3cret dbname=app", "host='db' user='app' dbname='app'"},
		{"host = db password = 's3 cret\\'x' sslpassword='k3y' dbname='my app'", "host='db' dbname='my app'"},
		{"host=db password='s3cret", "host='db' ='unreadable'"},
		{"host=db oops", "host='db' ='oops'"},
	} {
		got := dsnWithoutPassword(tc.in)
		if got != tc.want {
			t.Errorf("dsnWithoutPassword(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "s3") || strings.Contains(got, "k3y") {
			t.Errorf("dsnWithoutPassword(%q) = %q keeps a password", tc.in, got)
		}
	}
	if dsnWithoutPassword("host=a dbname=x") == dsnWithoutPassword("host=b dbname=x") {
		t.Fatal("the host does not count")
	}
}
