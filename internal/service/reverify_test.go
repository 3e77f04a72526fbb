package service_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// TestServeReverifiesOnSchedule: serve re-verifies past erasures on its
// schedule; a store file restored from a copy taken before the erasure is
// caught: a signed alert is POSTed to reverify.alert_url, the metrics count
// it, and a RESIDUAL certificate linked to the erasure's is written.
func TestServeReverifiesOnSchedule(t *testing.T) {
	ctx := context.Background()
	alerts := make(chan []byte, 4)
	secret := []byte("whsec-reverify")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := service.VerifyWebhook(secret, r.Header.Get(service.HeaderTimestamp), r.Header.Get(service.HeaderSignature), b, time.Now()); err != nil {
			t.Errorf("alert signature: %v", err)
		}
		alerts <- b
	}))
	defer srv.Close()

	root := t.TempDir()
	docPath := filepath.Join(root, "docs.db")
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: sqlitedoc.Type, Path: docPath}}
	cfg.Reverify = state.ReverifyConfig{Every: "7d", AlertURL: srv.URL}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	app, err := capture.Open(ctx, sd.Path)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := app.Docs(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if err := docs.Put(ctx, capture.Doc{ID: "d1", Kind: capture.KindDocument, Subject: alice, Text: "a note about the delivery to gate four"}); err != nil {
		t.Fatal(err)
	}
	app.Close() // closes the store: its file is complete
	backup, _ := os.ReadFile(docPath)
	app, err = capture.Open(ctx, sd.Path)
	if err != nil {
		t.Fatal(err)
	}
	er, err := app.Erase(ctx, alice, "DSR-12")
	if err != nil || !er.Complete {
		t.Fatalf("erase: %+v %v", er, err)
	}
	app.Close()
	for _, suf := range []string{"-wal", "-shm"} {
		os.Remove(docPath + suf)
	}
	if err := os.WriteFile(docPath, backup, 0o600); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	svc, err := service.Open(ctx, sd.Path, service.Options{Registerer: reg, WebhookSecret: secret, NoWorker: true,
		PollInterval: 50 * time.Millisecond, ReverifyEvery: time.Second, ReverifyCheck: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- svc.Run(rctx) }()
	var body map[string]any
	select {
	case b := <-alerts:
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no alert within 20s")
	}
	cancel()
	<-done
	if body["event"] != "erased_data_reappeared" || body["certificate_id"] != er.ID || body["residual"] != 1.0 || strings.Contains(string(mustJSON(body)), alice) {
		t.Fatalf("alert = %v", body)
	}
	rv := filepath.Join(sd.Path, "certificates", body["reverification_id"].(string)+".dsse.json")
	if _, err := os.Stat(rv); err != nil {
		t.Fatalf("the RESIDUAL certificate: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetValue() + "}"
			}
			got[name] = m.GetCounter().GetValue()
		}
	}
	if got["amnesia_reverify_total{reappeared}"] < 1 || got["amnesia_reverify_reappeared_records_total"] < 1 {
		t.Errorf("metrics: %v", got)
	}
	logb, _ := os.ReadFile(sd.LogPath())
	if !strings.Contains(string(logb), `"msg":"erased data reappeared"`) || strings.Contains(string(logb), alice) {
		t.Errorf("amnesia.log lacks the alert, or holds the raw subject")
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
