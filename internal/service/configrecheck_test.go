package service_test

import (
	"bytes"
	"context"
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
// claiming and logs it, with the message a host gets at its start, and
// serve itself goes on until it is stopped.
func TestServeWorkerLoopStopsAfterConfigPublish(t *testing.T) {
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
	svc, err := service.Open(ctx, sd.Path, service.Options{PollInterval: 50 * time.Millisecond, Lease: 3 * time.Second,
		WebhookSecret: []byte("whsec"), Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(logs.String(), "worker loop stopped") {
		t.Fatalf("the worker loop stopped before the publication:\n%s", logs.String())
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

	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "worker loop stopped") {
		if time.Now().After(deadline) {
			t.Fatalf("no 'worker loop stopped' in the log 10s after the publication:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := logs.String(); !strings.Contains(s, "configuration version 2") {
		t.Errorf("the log does not say which version refused this host:\n%s", s)
	}
	select {
	case err := <-ran:
		t.Fatalf("serve stopped with its worker loop: %v", err)
	default:
	}
	cancel()
	if err := <-ran; err == nil || !strings.Contains(err.Error(), "configuration") {
		t.Errorf("serve's Run at its end = %v, want the worker loop's configuration error", err)
	}
}
