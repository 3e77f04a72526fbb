package store

import (
	"context"
	"strings"
	"testing"
)

// This test binary links no adapter: a configuration of one of amnesia's
// own types says which import registers it.
func TestUnlinkedTypeNamesTheImport(t *testing.T) {
	for typ, imp := range adapterImports {
		c := Config{Name: "s", Type: typ, Path: "s.db", DSN: "postgres://u:s3cret@h/db"}
		err := Validate(c)
		if err == nil || !strings.Contains(err.Error(), `_ "`+imp+`"`) {
			t.Errorf("Validate(type %s) = %v, want it to name the import %s", typ, err, imp)
		}
		_, err = Open(context.Background(), c, false)
		if err == nil || !strings.Contains(err.Error(), `_ "`+imp+`"`) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(type %s) = %v, want it to name the import %s and not the DSN", typ, err, imp)
		}
	}
	if err := Validate(Config{Name: "s", Type: "mongodb"}); err == nil || !strings.Contains(err.Error(), `unknown type "mongodb"`) {
		t.Errorf("Validate(mongodb) = %v, want unknown type", err)
	}
}
