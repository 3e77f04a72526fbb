package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestParse(t *testing.T) {
	for spec, want := range map[string]string{
		"file:/run/pepper": "file:/run/pepper",
		"file:rel/pepper":  "file:/base/rel/pepper",
		"env:AMNESIA_P":    "env:AMNESIA_P",
		"dir:/run/keys":    "dir:/run/keys",
	} {
		p, err := Parse(spec, "/base")
		if err != nil || p.Describe() != want {
			t.Errorf("Parse(%q) = %v, %v; want %s", spec, p, err, want)
		}
	}
	for _, bad := range []string{"", "file:", "/run/pepper", "vault:x"} {
		if _, err := Parse(bad, ""); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestEnvAndFile(t *testing.T) {
	ctx := context.Background()
	t.Setenv("AMNESIA_TEST_SECRET", "s3")
	s, err := (&Env{Var: "AMNESIA_TEST_SECRET"}).Current(ctx)
	if err != nil || string(s.Value) != "s3" {
		t.Fatalf("env: %q, %v", s.Value, err)
	}
	if _, err := (&Env{Var: "AMNESIA_TEST_SECRET_UNSET"}).Current(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unset env: %v", err)
	}
	p := filepath.Join(t.TempDir(), "k")
	if _, err := (&File{Path: p}).Current(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	os.WriteFile(p, []byte("v"), 0o600)
	if s, err := (&File{Path: p}).Current(ctx); err != nil || string(s.Value) != "v" {
		t.Fatalf("file: %q, %v", s.Value, err)
	}
}

func TestDirRotation(t *testing.T) {
	ctx := context.Background()
	d := &DirProvider{Path: filepath.Join(t.TempDir(), "signing")}
	if _, err := d.Current(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty dir: %v", err)
	}
	if s, err := d.Put(ctx, []byte("one")); err != nil || s.Version != "1" {
		t.Fatalf("put 1: %+v %v", s, err)
	}
	// Names that are not versions are ignored; 10 sorts after 9.
	os.WriteFile(filepath.Join(d.Path, "README"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(d.Path, "09"), []byte("x"), 0o600)
	for i := 2; i <= 10; i++ {
		if _, err := d.Put(ctx, []byte{byte('0' + i%10)}); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := d.Current(ctx)
	if err != nil || cur.Version != "10" || string(cur.Value) != "0" {
		t.Fatalf("current = %+v, %v; want version 10", cur, err)
	}
	old, err := d.Get(ctx, "1")
	if err != nil || string(old.Value) != "one" {
		t.Fatalf("version 1 = %+v, %v", old, err)
	}
	fi, _ := os.Stat(filepath.Join(d.Path, "10"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	// Concurrent rotations each get their own version.
	var wg sync.WaitGroup
	seen := sync.Map{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := d.Put(ctx, []byte("c"))
			if err != nil {
				t.Error(err)
				return
			}
			if _, dup := seen.LoadOrStore(s.Version, true); dup {
				t.Errorf("version %s given twice", s.Version)
			}
		}()
	}
	wg.Wait()
	vs, _ := d.Versions(ctx)
	if len(vs) != 18 || vs[17] != "18" {
		t.Fatalf("versions %v, want 1..18", vs)
	}
}
