package pg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/jackc/pgx/v5"
)

// MaxRotations bounds the WAL switches one reclaim makes (each writes up to
// one segment, 16 MB by default, and is archived where archiving is on).
const MaxRotations = 64

var walName = regexp.MustCompile(`^[0-9A-F]{24}$`)

// walScanName also matches a partial segment (NAME.partial): the last,
// incomplete segment of a timeline that a promotion ended. It holds WAL
// records like any other and no checkpoint recycles or removes it, so the
// physical probe reads it; the rotation does not count it (it is never
// written again).
var walScanName = regexp.MustCompile(`^[0-9A-F]{24}(\.partial)?$`)

// walFile is one WAL segment file.
type walFile struct {
	Name string
	Size int64
}

// listWAL lists pg_wal's segment files, sorted, through SQL (pg_ls_waldir)
// or, failing that, the data directory. ok is false when neither is allowed.
func (t *Target) listWAL(ctx context.Context, c *pgx.Conn) (files []walFile, how string, ok bool, err error) {
	return t.listWALMatching(ctx, c, walName)
}

// listWALScan lists what the physical probe reads in pg_wal: the segment
// files and the partial segments (walScanName).
func (t *Target) listWALScan(ctx context.Context, c *pgx.Conn) (files []walFile, how string, ok bool, err error) {
	return t.listWALMatching(ctx, c, walScanName)
}

// listWALMatching lists the regular files of pg_wal whose name re matches,
// sorted by name.
func (t *Target) listWALMatching(ctx context.Context, c *pgx.Conn, re *regexp.Regexp) (files []walFile, how string, ok bool, err error) {
	switch {
	case t.Priv.DataDir:
		ents, err := os.ReadDir(filepath.Join(t.Opts.DataDir, "pg_wal"))
		if err != nil {
			return nil, "", false, fmt.Errorf("list pg_wal: %w", err)
		}
		for _, e := range ents {
			if !re.MatchString(e.Name()) || !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue // recycled or removed meanwhile
			}
			files = append(files, walFile{e.Name(), fi.Size()})
		}
		sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
		return files, "data_dir", true, nil
	case t.Priv.ListWAL:
		rows, err := c.Query(ctx, `SELECT name, size FROM pg_ls_waldir() WHERE name ~ $1 ORDER BY name`, re.String())
		if err != nil {
			return nil, "", false, fmt.Errorf("list pg_wal: %w", err)
		}
		files, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (walFile, error) {
			var f walFile
			err := r.Scan(&f.Name, &f.Size)
			return f, err
		})
		if err != nil {
			return nil, "", false, fmt.Errorf("list pg_wal: %w", err)
		}
		return files, "pg_ls_waldir", true, nil
	}
	return nil, "", false, nil
}

// rotateWAL makes the server recycle every WAL segment that existed before
// the reclaim. The WAL records of the rows' insert and delete, and full-page
// images of their pages, are in those segments; a recycled segment keeps its
// old bytes under a new name until it is written again, and pg_switch_wal
// zero-fills the rest of the current segment. So: switch and checkpoint
// (which recycles segments older than its redo point) once per segment that
// existed, plus two, at most MaxRotations. Segments the server retains
// (wal_keep_size, a replication slot's restart_lsn, archiving) stay, and are
// named in the steps.
func (r *run) rotateWAL(ctx context.Context) error {
	p := r.t.Priv
	if !p.SwitchWAL {
		r.step("pg_switch_wal skipped: role " + Display(p.Role) + " needs superuser or GRANT EXECUTE ON FUNCTION pg_switch_wal() TO " +
			Display(p.Role) + "; pg_wal keeps the deleted rows' WAL records until the server recycles its segments")
		return nil
	}
	before, _, listed, err := r.t.listWAL(ctx, r.c)
	if err != nil {
		return err
	}
	var cur0 string
	if err := r.c.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&cur0); err != nil {
		return fmt.Errorf("reclaim: current WAL segment: %w", err)
	}
	n := len(before) + 2
	if !listed {
		n = 4
	}
	n = min(n, MaxRotations)
	for i := 0; i < n; i++ {
		if ok, err := r.exec(ctx, "pg_switch_wal", "SELECT pg_switch_wal()"); err != nil || !ok {
			return err
		}
		if ok, err := r.exec(ctx, "CHECKPOINT after pg_switch_wal", "CHECKPOINT"); err != nil || !ok {
			return err
		}
	}
	if !listed {
		r.step(fmt.Sprintf("pg_switch_wal + CHECKPOINT x%d (pg_wal not listable by role %s: recycling not checked)", n, Display(p.Role)))
		return nil
	}
	after, _, _, err := r.t.listWAL(ctx, r.c)
	if err != nil {
		return err
	}
	r.step(fmt.Sprintf("pg_switch_wal + CHECKPOINT x%d (%d WAL segments before, first %s)", n, len(before), first(before)))
	// The checkpoints renamed the old segments ahead of the current one
	// (wal_recycle): they keep their old bytes until the WAL reaches them.
	// Under other load the server keeps more such segments than existed
	// before, so switch on until the WAL has passed the last of them.
	var cur string
	if err := r.c.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&cur); err != nil {
		return fmt.Errorf("reclaim: current WAL segment: %w", err)
	}
	last, ahead := "", 0
	for _, f := range after {
		if f.Name > cur {
			last, ahead = f.Name, ahead+1
		}
	}
	if ahead > 0 {
		m := 0
		for cur < last && n+m < MaxRotations {
			if ok, err := r.exec(ctx, "pg_switch_wal", "SELECT pg_switch_wal()"); err != nil || !ok {
				return err
			}
			if ok, err := r.exec(ctx, "CHECKPOINT after pg_switch_wal", "CHECKPOINT"); err != nil || !ok {
				return err
			}
			m++
			if err := r.c.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&cur); err != nil {
				return fmt.Errorf("reclaim: current WAL segment: %w", err)
			}
		}
		if cur < last {
			r.step(fmt.Sprintf("pg_switch_wal + CHECKPOINT x%d more: %d recycled segment(s) ahead of the WAL, up to %s, not all written again within %d switches; they may keep old bytes", m, ahead, last, MaxRotations))
		} else {
			r.step(fmt.Sprintf("pg_switch_wal + CHECKPOINT x%d more, through the %d recycled segment(s) that were ahead of the WAL (a recycled segment keeps its old bytes until it is written again)", m, ahead))
		}
	}
	var retained []string
	for _, f := range after {
		if f.Name <= cur0 {
			retained = append(retained, f.Name)
		}
	}
	if len(retained) > 0 {
		r.step(fmt.Sprintf("pg_wal retains %d segment(s) from before the reclaim (%s..%s): wal_keep_size, a replication slot's restart_lsn or archiving keeps them, and their WAL records may hold deleted rows' bytes",
			len(retained), retained[0], retained[len(retained)-1]))
	}
	return nil
}

func first(fs []walFile) string {
	if len(fs) == 0 {
		return "-"
	}
	return fs[0].Name
}
