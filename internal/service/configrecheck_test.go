package service_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve (PostgreSQL ledger) is running when `config publish` of another
// configuration is run for the installation: its worker loop stops
// claiming and logs it, with the message a host gets at its start; serve
// is then not ready (503) and refuses to record lineage, says why without
// a path or a value, and goes on answering the rest until it is stopped.
// Without a worker loop (NoWorker) serve finds the publication itself.
func TestServeStopsAfterConfigPublish(t *testing.T) {
	for _, noWorker := range []bool{false, true} {
		t.Run(map[bool]string{false: "worker", true: "no-worker"}[noWorker], func(t *testing.T) {
			serveAfterConfigPublish(t, noWorker)
		})
	}
}

func serveAfterConfigPublish(t *testing.T, noWorker bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: sqlitedoc.Type, Path: filepath.Join(root, "docs.db")}}
	cfg.Ledger = pgtest.DB(t)
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	svc, err := service.Open(ctx, sd.Path, service.Options{PollInterval: 50 * time.Millisecond, Lease: 3 * time.Second, NoWorker: noWorker,
		WebhookSecret: []byte("whsec"), Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(ctx) }()
	capturer := &service.Principal{Role: service.RoleCapture, Scopes: []string{"default"}}
	text := "a note of Dana"
	record := func(key string) error {
		_, err := svc.Record(ctx, capturer, "", []service.LineageRecord{{Store: "docs", Key: key, Kind: "source", Subject: "dana@example.org", Content: &text}})
		return err
	}
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(logs.String(), "worker loop stopped") {
		t.Fatalf("the worker loop stopped before the publication:\n%s", logs.String())
	}
	if err := svc.Ready(ctx); err != nil {
		t.Fatalf("Ready before the publication: %v", err)
	}
	if err := record("n1"); err != nil {
		t.Fatalf("Record before the publication: %v", err)
	}

	// Another host's configuration (another log origin) is published.
	other, err := state.Open(sd.Path)
	if err != nil {
		t.Fatal(err)
	}
	other.Config.LogOrigin = "amnesia.example/other-log"
	l, err := other.OpenLedger(ctx, state.LedgerConfigPublish)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if now, _, err := other.PublishConfig(ctx, l); err != nil || now.Version != 2 {
		t.Fatalf("publish: %+v, %v", now, err)
	}

	// serve finds it by itself (its worker loop before a claim, or its
	// poll without one), before any readiness probe asks.
	want := "worker loop stopped"
	if noWorker {
		want = "no longer the installation's"
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log 10s after the publication:\n%s", want, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := logs.String(); !strings.Contains(s, "configuration version 2") {
		t.Errorf("the log does not say which version refused this host:\n%s", s)
	}
	if err := record("n2"); !errors.Is(err, service.ErrUnavailable) || !errors.Is(err, service.ErrStaleConfig) {
		t.Fatalf("Record after the publication = %v, want ErrUnavailable and ErrStaleConfig", err)
	}
	err = svc.Ready(ctx)
	if !errors.Is(err, service.ErrUnavailable) || !errors.Is(err, service.ErrStaleConfig) {
		t.Fatalf("Ready after the publication = %v, want ErrUnavailable and ErrStaleConfig", err)
	}
	if msg := err.Error(); strings.Contains(msg, root) || strings.Contains(msg, "amnesia.example") {
		t.Errorf("Ready's answer names a path or a value: %s", msg)
	}
	// The rest of the API still answers: the lineage recorded before.
	op := &service.Principal{Role: service.RoleOperator, Scopes: []string{"default"}}
	if tr, err := svc.Trace(ctx, op, "", "dana@example.org"); err != nil || tr == nil {
		t.Fatalf("Trace after the publication: %+v, %v", tr, err)
	}
	select {
	case err := <-ran:
		t.Fatalf("serve stopped: %v", err)
	default:
	}
	cancel()
	err = <-ran
	if !noWorker && (err == nil || !strings.Contains(err.Error(), "configuration")) {
		t.Errorf("serve's Run at its end = %v, want the worker loop's configuration error", err)
	}
}
