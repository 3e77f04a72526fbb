package mcpserver_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/mcpserver"
	"github.com/amnesia-dev/amnesia/internal/server"
	"github.com/amnesia-dev/amnesia/internal/service"
)

// TestMountedOnServe runs the whole conversation through serve's HTTP
// server, with the MCP handler mounted at /mcp as `amnesia serve` mounts it
// (serve's middleware, body limit and request log in front of it).
func TestMountedOnServe(t *testing.T) {
	f := buildFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	svc, err := service.Open(ctx, f.state(), service.Options{PollInterval: 100 * time.Millisecond, Log: log})
	if err != nil {
		t.Fatalf("open service: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	mcpH := mcpserver.New(svc, mcpserver.Options{StateDir: f.state(), Logger: log}).Handler()
	srv, err := server.New(server.Options{Service: svc, Log: log, Mounts: map[string]http.Handler{"/mcp": mcpH}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		cancel()
		<-done
		svc.Close()
	})
	endpoint := &httptest.Server{URL: ts.URL + "/mcp"}
	scenario(t, f, httpConnector(endpoint, f.token(t, service.RoleOperator)))
	if !strings.Contains(logs.String(), `"path":"/mcp"`) {
		t.Errorf("serve's request log has no /mcp request:\n%s", logs.String())
	}
	assertNoLeak(t, "serve's log", logs.String())
	f.assertLogClean(t)
}
