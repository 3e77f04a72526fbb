package weaviate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/weaviate"
)

func TestSettingProblems(t *testing.T) {
	good := map[string]string{"PERSISTENCE_MAX_REUSE_WAL_SIZE": "0", "PERSISTENCE_MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS": "1"}
	if ps := weaviate.SettingProblems(good); len(ps) != 0 {
		t.Fatalf("the documented settings are reported: %v", ps)
	}
	ps := weaviate.SettingProblems(map[string]string{})
	if len(ps) != 2 || !strings.Contains(ps[0], "PERSISTENCE_MAX_REUSE_WAL_SIZE is unset") || !strings.Contains(ps[1], "after 60 s") {
		t.Fatalf("defaults: %v", ps)
	}
	// The newest name wins over the older ones, as in the server.
	ps = weaviate.SettingProblems(map[string]string{"PERSISTENCE_MAX_REUSE_WAL_SIZE": "4KiB", "PERSISTENCE_FLUSH_IDLE_MEMTABLES_AFTER": "5", "PERSISTENCE_MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS": "120"})
	if len(ps) != 2 || !strings.Contains(ps[0], "is 4KiB") || !strings.Contains(ps[1], "after 120 s") {
		t.Fatalf("%v", ps)
	}
}

// An API key given in the DSN never appears in where the store is said to
// be, nor in an error.
func TestAPIKeyStaysOut(t *testing.T) {
	c := store.Config{Name: "m", Type: weaviate.Type, DSN: "http://:s3cr3t-key@127.0.0.1:1", Collection: "Memory"}
	loc, ok := store.Location(c)
	if !ok || strings.Contains(loc, "s3cr3t") || !strings.Contains(loc, "127.0.0.1:1") {
		t.Fatalf("location %q", loc)
	}
	_, err := weaviate.Open(context.Background(), weaviate.Options{Name: "m", URL: c.DSN, Class: "Memory"}, false)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("open of an unreachable server: %v", err)
	}
	for _, p := range weaviate.Check(context.Background(), c) {
		if strings.Contains(p.Message, "s3cr3t") {
			t.Fatalf("check quotes the key: %s", p)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []store.Config{
		{Name: "m", Type: weaviate.Type, Collection: "Memory"},
		{Name: "m", Type: weaviate.Type, DSN: "127.0.0.1:8080", Collection: "Memory"},
		{Name: "m", Type: weaviate.Type, DSN: "http://127.0.0.1:8080", Collection: "memory"},
		{Name: "m", Type: weaviate.Type, DSN: "http://127.0.0.1:8080", Collection: "Memory", Reclaim: "vacuum"},
		{Name: "m", Type: weaviate.Type, DSN: "http://127.0.0.1:8080", Collection: "Memory", Subject: "a-b"},
	} {
		if err := store.Validate(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
