package capture_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// wrapperless is a store type that configuration accepts (it is registered
// with package store) but no package registers a capture wrapper for, as a
// third-party adapter that does not implement capture/backend.
const wrapperless = "capture-test-wrapperless"

func init() {
	store.Register(wrapperless, store.Adapter{Open: func(context.Context, store.Config, bool) (store.Store, error) {
		return nil, errors.New("the wrapperless test store is never opened")
	}})
}

// App.Docs and App.Vectors find their wrapper by the configured store's
// type in the registry the adapters fill; a type without one is refused
// before the store is opened, with a message that says so, not one that
// sends the caller to the other family.
func TestAppWrapperRegistry(t *testing.T) {
	ctx := context.Background()
	stateDir := initConfig(t,
		store.Config{Name: "docs", Type: sqlitedoc.Type, Path: "docs.db"},
		store.Config{Name: "vectors", Type: sqlitevec.Type, Path: "vectors.db", Dimensions: 4},
		store.Config{Name: "other", Type: wrapperless},
	)
	app, err := capture.Open(ctx, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for _, err := range []error{
		func() error { _, err := app.Docs(ctx, "other"); return err }(),
		func() error { _, err := app.Vectors(ctx, "other"); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "capture cannot wrap stores of type "+wrapperless) || strings.Contains(err.Error(), "never opened") {
			t.Errorf("store without a capture wrapper: %v", err)
		}
	}
	d, err := app.Docs(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	v, err := app.Vectors(ctx, "vectors")
	if err != nil {
		t.Fatal(err)
	}
	if d.Store() != "docs" || v.Store() != "vectors" {
		t.Errorf("wrapped stores are named %q and %q, want docs and vectors", d.Store(), v.Store())
	}
}

// The adapters' stores are what Recorder.Docs and Recorder.Vectors take.
var (
	_ capture.DocStore    = (*sqlitedoc.Store)(nil)
	_ capture.DocStore    = (*pgdoc.Store)(nil)
	_ capture.VectorStore = (*sqlitevec.Store)(nil)
)
