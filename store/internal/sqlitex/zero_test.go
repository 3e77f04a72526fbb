package sqlitex

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// filled is the content of a database file fill wrote.
func filled(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	fill(t, path, true)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// intact fails t unless PRAGMA integrity_check on db says ok.
func intact(t *testing.T, db *sql.DB, what string) {
	t.Helper()
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check %s: %q, %v", what, ok, err)
	}
}

// dirtyCopy writes a copy of the filled database b to a new file with
// secret planted in the gap of a page of type typ, and returns its path and
// the secret's offset.
func dirtyCopy(t *testing.T, b []byte, typ byte, secret []byte) (string, int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.db")
	off := gapEnd(t, b, typ, 32) - len(secret)
	f := append([]byte(nil), b...)
	copy(f[off:], secret)
	if err := os.WriteFile(p, f, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, off
}

// inFiles reports which of the database's files hold secret.
func inFiles(p string, secret []byte) []string {
	var in []string
	for _, fn := range Files(p) {
		if got, _ := os.ReadFile(fn); bytes.Contains(got, secret) {
			in = append(in, filepath.Base(fn))
		}
	}
	return in
}

// rows is every row of t, in order, as one string.
func rows(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	if err := db.QueryRow(`SELECT group_concat(id || ':' || k || ':' || v, '|') FROM (SELECT * FROM t ORDER BY id)`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A connection that read a dirty page keeps it in its page cache across
// transactions, and writing that page later writes the stray bytes back
// (the control case, zeroing the file behind SQLite's back, shows it).
// Zeroing in place makes every connection drop its cache (and closes its
// own connection, whose cache holds the page too): after another
// connection and the pool's connection write every page of the table, no
// file holds the bytes.
func TestZeroInPlaceLeavesNoCachedCopy(t *testing.T) {
	ctx := context.Background()
	b := filled(t)
	secret := []byte("SECRET-LEFT-BEHIND")
	for _, control := range []bool{true, false} {
		p, off := dirtyCopy(t, b, leafTable, secret)
		db, err := Open(ctx, p, false)
		if err != nil {
			t.Fatal(err)
		}
		other, err := sql.Open("sqlite3", "file:"+p+"?_journal_mode=WAL&_secure_delete=on")
		if err != nil {
			t.Fatal(err)
		}
		other.SetMaxOpenConns(1)
		db.SetMaxOpenConns(1) // Reclaim then takes the connection that cached the page
		before := rows(t, db)
		if got := rows(t, other); got != before {
			t.Fatal("the two connections read different rows")
		}
		if control {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(make([]byte, len(secret)), int64(off)); err != nil {
				t.Fatal(err)
			}
			// f stays open: closing it would drop the connections' locks.
			defer f.Close()
		} else {
			// zeroInPlace alone, as Reclaim runs it but without the
			// checkpoint after it: the other connection writes first.
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := AuditFreeSpace(ctx, conn, p)
			if err != nil {
				t.Fatal(err)
			}
			after, refused, wrote, err := zeroInPlace(ctx, db, conn, p, fs)
			if err != nil || refused != "" || !wrote || after.Zeroed != int64(len(secret)) || after.NonZero != 0 {
				t.Fatalf("zeroInPlace: %s, refused %q, wrote %v, %v", after, refused, wrote, err)
			}
			conn.Close()
		}
		if in := inFiles(p, secret); len(in) > 0 {
			t.Fatalf("control %v: %v hold the bytes right after zeroing", control, in)
		}
		for i, c := range []*sql.DB{other, db} {
			for _, q := range []string{`UPDATE t SET k = upper(k)`, `INSERT INTO t (k, v) SELECT k || '+` + string(rune('a'+i)) + `', 'short' FROM t WHERE id < 400`} {
				if _, err := c.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			t.Fatal(err)
		}
		in := inFiles(p, secret)
		if control && len(in) == 0 {
			t.Error("control: zeroed behind SQLite's back, the bytes did not come back from a connection's cache; the test shows nothing")
		}
		if !control && len(in) > 0 {
			t.Errorf("after zeroing in place and writes from other connections, %v hold the bytes again", in)
		}
		intact(t, db, "after the writes")
		other.Close()
		db.Close()
	}
}

// Zeroing in place changes no row: the rows read before and after are the
// same, through the table and through its index, and the file audits clean.
func TestZeroInPlaceChangesNoRow(t *testing.T) {
	ctx := context.Background()
	b := filled(t)
	for _, typ := range []byte{leafTable, leafIndex} {
		p, _ := dirtyCopy(t, b, typ, []byte("SECRET-LEFT-BEHIND"))
		db, err := Open(ctx, p, false)
		if err != nil {
			t.Fatal(err)
		}
		var byIndex, byIndexAfter string
		q := `SELECT group_concat(k, ',') FROM (SELECT k FROM t INDEXED BY sqlite_autoindex_t_1 WHERE k > '' ORDER BY k)`
		before := rows(t, db)
		if err := db.QueryRow(q).Scan(&byIndex); err != nil {
			t.Fatal(err)
		}
		if fs := audit(t, p); fs.NonZero != 18 || len(fs.plan) != 1 {
			t.Fatalf("before: %s; want the planted bytes found on one page", fs)
		}
		if rep, err := Reclaim(ctx, db, p); err != nil || !strings.Contains(rep.Method, "zeroed in place") {
			t.Fatalf("Reclaim: %q, %v", rep.Method, err)
		}
		if err := db.QueryRow(q).Scan(&byIndexAfter); err != nil {
			t.Fatal(err)
		}
		if after := rows(t, db); after != before || byIndexAfter != byIndex {
			t.Errorf("page type %d: the rows changed", typ)
		}
		if fs := audit(t, p); !fs.Clean() || fs.Zeroed != 0 {
			t.Errorf("page type %d: after: %s", typ, fs)
		}
		db.Close()
	}
}

// zeroInPlace refuses, writing nothing, when the file may not be the one
// the audit read (another connection committed since), and when page 1 is
// dirty; Reclaim then rebuilds.
func TestZeroInPlaceRefuses(t *testing.T) {
	ctx := context.Background()
	b := filled(t)
	secret := []byte("SECRET-LEFT-BEHIND")

	t.Run("a commit since the audit", func(t *testing.T) {
		p, _ := dirtyCopy(t, b, leafTable, secret)
		db, conn := openConn(t, p)
		fs, err := AuditFreeSpace(ctx, conn, p)
		if err != nil || len(fs.plan) != 1 {
			t.Fatalf("audit: %s, %v", fs, err)
		}
		if _, err := db.Exec(`UPDATE t SET v = 'changed' WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		file, _ := os.ReadFile(p)
		after, refused, wrote, err := zeroInPlace(ctx, db, conn, p, fs)
		if err != nil || wrote || !strings.Contains(refused, "another connection committed since the audit") || after.Zeroed != 0 {
			t.Errorf("zeroInPlace: refused %q, wrote %v, %v; want a refusal", refused, wrote, err)
		}
		if now, _ := os.ReadFile(p); !bytes.Equal(now, file) {
			t.Error("the refusal wrote the database file")
		}
	})

	t.Run("a page changed since the audit", func(t *testing.T) {
		p, off := dirtyCopy(t, b, leafTable, secret)
		db, conn := openConn(t, p)
		fs, err := AuditFreeSpace(ctx, conn, p)
		if err != nil || len(fs.plan) != 1 {
			t.Fatalf("audit: %s, %v", fs, err)
		}
		// One of the planted bytes changes behind SQLite's back: no
		// commit, so data_version cannot tell; the page's digest does.
		w, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.WriteAt([]byte("X"), int64(off)); err != nil {
			t.Fatal(err)
		}
		file, _ := os.ReadFile(p)
		after, refused, wrote, err := zeroInPlace(ctx, db, conn, p, fs)
		if err != nil || wrote || !strings.Contains(refused, "is not as the audit read it") || after.Zeroed != 0 {
			t.Errorf("zeroInPlace: refused %q, wrote %v, %v; want a refusal", refused, wrote, err)
		}
		if now, _ := os.ReadFile(p); !bytes.Equal(now, file) {
			t.Error("the refusal wrote the database file")
		}
	})

	t.Run("page 1", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "x.db")
		f := append([]byte(nil), b...)
		// page 1's gap: past sqlite_master's cell pointers
		n := int(f[100+3])<<8 | int(f[100+4])
		start := int(f[100+5])<<8 | int(f[100+6])
		if start-(108+2*n) < 40 {
			t.Skipf("page 1 has a gap of %d bytes", start-(108+2*n))
		}
		copy(f[start-len(secret)-4:], secret)
		if err := os.WriteFile(p, f, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := Open(ctx, p, false)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rep, err := Reclaim(ctx, db, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(rep.Method, "not zeroed in place: page 1") || !strings.Contains(rep.Method, "VACUUM, because") {
			t.Errorf("method %q: want page 1 not zeroed in place, and VACUUM", rep.Method)
		}
		if in := inFiles(p, secret); len(in) > 0 {
			t.Errorf("%v still hold the bytes", in)
		}
	})
}

// A crash between zeroInPlace's writes leaves some ranges zeroed and some
// not: each page is still valid (integrity_check), every row is there, and
// the next audit finds what is left. Simulated by zeroing one of two dirty
// pages' ranges by hand.
func TestZeroInPlaceTorn(t *testing.T) {
	ctx := context.Background()
	b := filled(t)
	secret := []byte("SECRET-LEFT-BEHIND")
	p, off := dirtyCopy(t, b, leafTable, secret)
	f, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ioff := gapEnd(t, f, leafIndex, 32) - len(secret)
	copy(f[ioff:], secret)
	if err := os.WriteFile(p, f, 0o600); err != nil {
		t.Fatal(err)
	}
	fs := audit(t, p)
	if len(fs.plan) != 2 {
		t.Fatalf("%s: want two dirty pages listed", fs)
	}
	// The first listed page's ranges only, as a crash after them would.
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := fs.plan[0]
	for _, r := range first.ranges {
		if _, err := w.WriteAt(make([]byte, r[1]-r[0]), int64(first.pg-1)*int64(fs.pageSize)+int64(r[0])); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	db, err := Open(ctx, p, false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	intact(t, db, "after a torn zeroing")
	if n := rows(t, db); !strings.Contains(n, "row 1 holds") {
		t.Error("rows lost")
	}
	again := audit(t, p)
	if again.NonZero != int64(len(secret)) || len(again.plan) != 1 || again.plan[0].pg != fs.plan[1].pg {
		t.Errorf("after a torn zeroing: %s; want the other page's %d bytes found", again, len(secret))
	}
	_ = off
}

// SQLite names the WAL after the database's path with its symbolic links
// resolved. Opened through a link, with another connection's frames in the
// WAL beside the real file, the audit is undecided: it does not take the
// missing WAL at the link's name for an empty one.
func TestAuditSymlinkedWAL(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.db"), filepath.Join(dir, "link.db")
	fill(t, real, true)
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("symbolic links: %v", err)
	}
	if got := Files(link)[1]; got != real+"-wal" {
		t.Fatalf("the WAL of %s: %s; want %s", link, got, real+"-wal")
	}
	app, err := sql.Open("sqlite3", "file:"+real+"?_journal_mode=WAL&_secure_delete=off")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	app.SetMaxOpenConns(1)
	for _, q := range []string{`PRAGMA wal_autocheckpoint = 0`, `UPDATE t SET v = v || 'x'`} {
		if _, err := app.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(real + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the WAL holds no frames (%v): the case shows nothing", err)
	}
	if fs := audit(t, link); !strings.Contains(fs.Undecided, "WAL") || fs.plan != nil {
		t.Errorf("audit through the link with frames in the WAL: %s; want undecided", fs)
	}
}
