package pg

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
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

// A segment that a checkpoint recycles while pg_wal is scanned (renamed to
// a name the listing did not have, old bytes and all) before the probe read
// it: the probe lists pg_wal again and reads it under its new name. It was
// skipped before (a listed file that is gone is skipped), so the scan
// missed bytes that were still on disk.
func TestWALScanFollowsARecycledSegment(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "pg_wal")
	if err := os.MkdirAll(wal, 0o700); err != nil {
		t.Fatal(err)
	}
	needle := []byte("a deleted row's bytes in old WAL!")
	seg := func(name string, body []byte) {
		if err := os.WriteFile(filepath.Join(wal, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	seg("000000010000000000000001", make([]byte, 4096))
	old := append(make([]byte, 1000), needle...)
	seg("000000010000000000000002", append(old, make([]byte, 3000)...))
	recycled := false
	walScanned = func(name string) {
		if name == "000000010000000000000001" && !recycled {
			recycled = true // the checkpoint recycles segment 2 ahead, before the probe reads it
			if err := os.Rename(filepath.Join(wal, "000000010000000000000002"), filepath.Join(wal, "000000010000000000000009")); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer func() { walScanned = nil }()
	tg := &Target{Opts: Options{DataDir: dir}, Priv: Privileges{DataDir: true}}
	sc := store.NewScanner(store.NewNeedleSet(map[string]*store.Evidence{"k": {Key: "k", Needles: [][]byte{needle}}}), "")
	files, how, listed, passes, err := tg.scanWAL(context.Background(), nil, sc)
	if err != nil || !listed || how != "data_dir" {
		t.Fatalf("scanWAL: %v (listed %v, how %q)", err, listed, how)
	}
	if !recycled {
		t.Fatal("the segment was not recycled during the scan: the test did not run its case")
	}
	if passes != 2 {
		t.Errorf("pg_wal listed %d times, want 2 (once more after a segment went)", passes)
	}
	if rep := sc.Report(); rep.NeedlesFound != 1 {
		t.Errorf("found %d needles, want the one in the recycled segment", rep.NeedlesFound)
	}
	if len(files) != 2 || files[1].Name != "000000010000000000000009" {
		t.Errorf("last listing %v, want segments 1 and 9", files)
	}
}
