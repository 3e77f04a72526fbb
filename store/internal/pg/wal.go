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

// unlistedRotations is how many switches rotateWAL makes when the role may
// list pg_wal neither through data_dir nor pg_ls_waldir(): what is left
// there cannot be checked (the probe then reports its scan partial).
const unlistedRotations = 4

// rotateWAL makes the server write again, or remove, every WAL segment file
// that may hold bytes of the deleted rows: the WAL records of their insert,
// full-page images of their pages (the DELETE's among them), and what the
// reclaim itself logged before this call (pg_statistic's old sample
// values). All of that was written before rotateWAL starts, so it lies in
// the segments up to upTo, the one the WAL is written in then, or in files
// a checkpoint renamed from them.
//
// A checkpoint removes the segments behind its redo point or, with
// wal_recycle (the default), renames them ahead of the write position, as
// many as min_wal_size, max_wal_size and its estimate of the WAL up to the
// next checkpoint allow: a recycled segment keeps its old bytes under its
// new name until the WAL reaches it and writes it from its start.
// pg_switch_wal zero-fills the rest of the segment it ends. So:
//
//  1. pg_switch_wal + CHECKPOINT: the switch ends upTo (or a later
//     segment), and the checkpoint, whose redo point is past the switch,
//     removes or recycles every segment up to upTo that the server does
//     not retain (wal_keep_size, a replication slot, archiving);
//  2. pg_wal is listed: every file named after upTo is the segment being
//     written or one ahead of it, recycled or new; every file named upTo
//     or before is retained;
//  3. pg_switch_wal + CHECKPOINT until the write position is past the last
//     file named after upTo: each of those was then written again from
//     its start. What these checkpoints recycle meanwhile holds only WAL
//     written after the reclaim (and zeros), and needs no pass;
//  4. pg_wal is listed again: when a retained file is gone, the server let
//     it go and may have recycled it, bytes and all, ahead of the write
//     position, so 3 and 4 are repeated through the files then listed.
//
// At most MaxRotations switches in all. Retained segments are named in the
// steps; the probe scans every file of pg_wal and measures what is left.
func (r *run) rotateWAL(ctx context.Context) error {
	p := r.t.Priv
	if !p.SwitchWAL {
		r.step("pg_switch_wal skipped: role " + Display(p.Role) + " needs superuser or GRANT EXECUTE ON FUNCTION pg_switch_wal() TO " +
			Display(p.Role) + "; pg_wal keeps the deleted rows' WAL records until the server recycles its segments")
		return nil
	}
	upTo, err := r.walSegment(ctx)
	if err != nil {
		return err
	}
	if ok, err := r.rotateOnce(ctx); err != nil || !ok {
		return err
	}
	rounds := 1
	files, _, listed, err := r.t.listWAL(ctx, r.c)
	if err != nil {
		return err
	}
	if !listed {
		for ; rounds < unlistedRotations; rounds++ {
			if ok, err := r.rotateOnce(ctx); err != nil || !ok {
				return err
			}
		}
		r.step(fmt.Sprintf("pg_switch_wal + CHECKPOINT x%d (pg_wal not listable by role %s: recycling not checked)", rounds, Display(p.Role)))
		return nil
	}
	ahead, retained := walPlan(files, upTo)
	listedAhead := len(ahead)
	span := "-"
	if len(ahead) > 0 {
		span = ahead[0] + ".." + ahead[len(ahead)-1]
	}
	var cur, target string
	releases := 0
	for pass := 0; pass < MaxRotations; pass++ {
		target = ""
		if len(ahead) > 0 {
			target = ahead[len(ahead)-1]
		}
		if cur, err = r.walSegment(ctx); err != nil {
			return err
		}
		for cur <= target && rounds < MaxRotations {
			if ok, err := r.rotateOnce(ctx); err != nil || !ok {
				return err
			}
			rounds++
			if cur, err = r.walSegment(ctx); err != nil {
				return err
			}
		}
		if files, _, _, err = r.t.listWAL(ctx, r.c); err != nil {
			return err
		}
		if cur <= target || !released(retained, files) {
			break
		}
		releases++
		ahead, retained = walPlan(files, upTo)
	}
	if cur <= target {
		r.step(fmt.Sprintf("pg_switch_wal + CHECKPOINT x%d: the write position (%s) did not pass %s within %d switches: the WAL segment files after %s up to %s were not all written again, and may keep old bytes",
			rounds, cur, target, MaxRotations, cur, target))
	} else {
		s := fmt.Sprintf("pg_switch_wal + CHECKPOINT x%d, until the write position (%s) had passed the last of the %d WAL segment file(s) at or ahead of it after the first switch and checkpoint (%s): each was written again from its start (a recycled segment keeps its old bytes until then; pg_switch_wal zero-fills the rest of the segment it ends)",
			rounds, cur, listedAhead, span)
		if releases > 0 {
			s += fmt.Sprintf("; retained segment files were let go meanwhile (%d time(s)), so the rotation went on through the files then ahead of the write position", releases)
		}
		r.step(s)
	}
	var kept []string
	for _, f := range files {
		if f.Name <= upTo {
			kept = append(kept, f.Name)
		}
	}
	if len(kept) > 0 {
		r.step(fmt.Sprintf("pg_wal retains %d segment(s) from before the reclaim (%s..%s): wal_keep_size, a replication slot's restart_lsn or archiving keeps them, and their WAL records may hold deleted rows' bytes",
			len(kept), kept[0], kept[len(kept)-1]))
	}
	return nil
}

// rotateOnce runs pg_switch_wal, then CHECKPOINT: a WAL record in the new
// segment (without one the next switch would do nothing) and the removal or
// recycling of the segments behind its redo point. ok is false when a
// statement timed out on every attempt (recorded for the verdict).
func (r *run) rotateOnce(ctx context.Context) (bool, error) {
	if ok, err := r.exec(ctx, "pg_switch_wal", "SELECT pg_switch_wal()"); err != nil || !ok {
		return false, err
	}
	return r.exec(ctx, "CHECKPOINT after pg_switch_wal", "CHECKPOINT")
}

// walSegment returns the name of the WAL segment that holds the last byte
// the server has written (pg_walfile_name of pg_current_wal_lsn()).
func (r *run) walSegment(ctx context.Context) (string, error) {
	var s string
	if err := r.c.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&s); err != nil {
		return "", fmt.Errorf("reclaim: current WAL segment: %w", err)
	}
	return s, nil
}

// walPlan sorts the names of a listing of pg_wal, taken after a switch out
// of segment upTo and a checkpoint, into the files named after upTo (ahead:
// the segment being written and those ahead of it, which the WAL must pass)
// and the files named upTo or before (retained: the checkpoint would have
// removed or recycled them had the server not kept them). Both are sorted;
// names compare as segment order within a timeline.
func walPlan(files []walFile, upTo string) (ahead, retained []string) {
	for _, f := range files {
		if f.Name > upTo {
			ahead = append(ahead, f.Name)
		} else {
			retained = append(retained, f.Name)
		}
	}
	sort.Strings(ahead)
	sort.Strings(retained)
	return ahead, retained
}

// released reports whether a file of retained is missing from files: the
// server let it go, and a checkpoint removed it or recycled it ahead of the
// write position.
func released(retained []string, files []walFile) bool {
	now := make(map[string]bool, len(files))
	for _, f := range files {
		now[f.Name] = true
	}
	for _, name := range retained {
		if !now[name] {
			return true
		}
	}
	return false
}
