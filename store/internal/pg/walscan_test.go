package pg

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The physical probe reads a partial segment (NAME.partial, the last
// segment of a timeline a promotion ended: WAL records that no checkpoint
// recycles), the rotation does not count it, and neither lists timeline
// history files, archive status or temporary files.
func TestWALScanListsPartialSegments(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "pg_wal")
	if err := os.MkdirAll(filepath.Join(wal, "archive_status"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{
		"000000010000000000000003":         16,
		"000000010000000000000004.partial": 8,
		"000000020000000000000004":         16,
		"00000002.history":                 4,
		"xlogtemp.123":                     16,
	} {
		if err := os.WriteFile(filepath.Join(wal, name), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tg := &Target{Opts: Options{DataDir: dir}, Priv: Privileges{DataDir: true}}
	names := func(fs []walFile) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return out
	}
	scan, how, ok, err := tg.listWALScan(context.Background(), nil)
	if err != nil || !ok || how != "data_dir" {
		t.Fatalf("listWALScan: %v, ok %v, how %q", err, ok, how)
	}
	want := []string{"000000010000000000000003", "000000010000000000000004.partial", "000000020000000000000004"}
	if got := names(scan); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("the probe lists %v, want %v", got, want)
	}
	if scan[1].Size != 8 {
		t.Errorf("the partial segment's size is %d, want 8", scan[1].Size)
	}
	rot, _, _, err := tg.listWAL(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(rot); len(got) != 2 || got[0] != want[0] || got[1] != want[2] {
		t.Errorf("the rotation lists %v, want the two full segments", got)
	}
}
