package capture_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store"
	_ "github.com/amnesia-dev/amnesia/store/file"
)

// A training row and the people it mentions are recorded together: the
// mentioned person's view reaches the row, and a mention that cannot be
// keyed (an empty id) writes neither the row's artifact nor the row.
func TestTrainingRowMentionsRecordedWithTheRow(t *testing.T) {
	ctx := context.Background()
	cfg := state.DefaultConfig()
	root := t.TempDir()
	cfg.Stores = []store.Config{{Name: "rows", Type: "file", Path: filepath.Join(root, "rows.jsonl"),
		Format: "jsonl", Key: "id", Subject: "subject", Content: []string{"text"}}}
	dir := root + "/.amnesia"
	if _, err := state.Init(dir, cfg); err != nil {
		t.Fatal(err)
	}
	app, err := capture.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := app.PutTrainingRow(ctx, "rows", capture.TrainingRow{ID: "r1", Subject: alice, Text: "alice wrote to bob", Mentions: []string{bob}}); err != nil {
		t.Fatal(err)
	}
	l := lineageOf(t, dir)
	bk, err := app.Recorder().SubjectKey(bob)
	if err != nil {
		t.Fatal(err)
	}
	v, err := l.View(ctx, app.Recorder().Scope(), bk)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Mentions) != 1 {
		t.Fatalf("bob's view: %d mentioning artifacts, want the training row", len(v.Mentions))
	}
	if err := app.PutTrainingRow(ctx, "rows", capture.TrainingRow{ID: "r2", Subject: alice, Text: "x", Mentions: []string{""}}); err == nil {
		t.Fatal("a training row with an empty mention was accepted")
	}
	ak, _ := app.Recorder().SubjectKey(alice)
	if v, err = l.View(ctx, app.Recorder().Scope(), ak); err != nil {
		t.Fatal(err)
	}
	if len(v.Owned) != 1 {
		t.Errorf("alice owns %d artifacts after a refused row, want 1", len(v.Owned))
	}
	b, err := os.ReadFile(filepath.Join(root, "rows.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Errorf("the dataset holds %d rows after a refused one, want 1", n)
	}
}
