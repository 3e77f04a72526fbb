package redis

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// Residue states Reclaim reports.
const (
	StateDeferred   = "PENDING-reclaim-deferred"
	StateAOFPending = "PENDING-aof-rewrite"
	StateRDBPending = "PENDING-rdb-save"
	StateNoDataDir  = "UNVERIFIED-no-data-dir"
)

// pollEvery is how often Reclaim reads INFO persistence while it waits.
const pollEvery = 50 * time.Millisecond

// persistence is the part of INFO persistence Reclaim reads.
type persistence map[string]string

func (p persistence) int(k string) int64 {
	n, _ := strconv.ParseInt(p[k], 10, 64)
	return n
}

func (s *Store) persistence(ctx context.Context) (persistence, error) {
	txt, err := s.rdb.Info(ctx, "persistence").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO persistence at %s: %w", s.loc, err)
	}
	p := persistence{}
	for _, line := range strings.Split(txt, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			p[k] = v
		}
	}
	return p, nil
}

// errTimeout means the wait bound passed; what remains is in the message.
var errTimeout = errors.New("reclaim_wait passed")

// waitFor polls INFO persistence until done says so or the deadline passes.
func (s *Store) waitFor(ctx context.Context, deadline time.Time, what string, done func(persistence) bool) (persistence, error) {
	for {
		p, err := s.persistence(ctx)
		if err != nil {
			return nil, err
		}
		if done(p) {
			return p, nil
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("%w: %s still running", errTimeout, what)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

func aofIdle(p persistence) bool {
	return p["aof_rewrite_in_progress"] == "0" && p["aof_rewrite_scheduled"] == "0"
}

func rdbIdle(p persistence) bool { return p["rdb_bgsave_in_progress"] == "0" }

// busy reports whether err is Redis refusing a background job because
// another one runs: the caller waits and asks again.
func busy(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "in progress") || strings.Contains(m, "already")
}

// Reclaim implements store.Reclaimer: BGREWRITEAOF (when the AOF is on) and
// BGSAVE, each started anew after the erasure's DEL (a job already running
// may predate it, so Reclaim waits for it and starts its own) and waited
// for by polling INFO persistence (aof_rewrite_in_progress,
// aof_rewrite_scheduled, aof_last_bgrewrite_status; rdb_bgsave_in_progress,
// rdb_last_bgsave_status), then, with data_dir, for the AOF manifest to
// list no history file. All within reclaim_wait; what is left is reported
// as PENDING. Idempotent: on a clean store it rewrites clean files again.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	if s.o.DeleteOnly {
		return store.ReclaimReport{
			Method:   "reclaim: delete-only: DEL only, the AOF and RDB were not rewritten",
			State:    StateDeferred,
			Evidence: "reclaim: delete-only is configured: the deleted values stay in the AOF and the last RDB until the server rewrites them (BGREWRITEAOF, BGSAVE)",
		}, nil
	}
	deadline := time.Now().Add(s.o.ReclaimWait)
	rep := store.ReclaimReport{Method: "BGREWRITEAOF and BGSAVE where the server keeps an AOF and an RDB, waited for through INFO persistence (the steps say which ran)"}
	pending := func(state, what string, err error) (store.ReclaimReport, error) {
		if !errors.Is(err, errTimeout) {
			return store.ReclaimReport{}, fmt.Errorf("reclaim at %s: %w", s.loc, err)
		}
		rep.State = state
		rep.Evidence = fmt.Sprintf("%s did not finish within reclaim_wait (%s): %v; the deleted values may remain in %s until it does; run the erasure again to finish", what, s.o.ReclaimWait, err, what)
		return rep, nil
	}
	p, err := s.persistence(ctx)
	if err != nil {
		return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", err)
	}
	if p["aof_enabled"] == "1" {
		if err := s.startJob(ctx, deadline, "BGREWRITEAOF", func() error { return s.rdb.BgRewriteAOF(ctx).Err() }, aofIdle); err != nil {
			return pending(StateAOFPending, "the AOF rewrite", err)
		}
		p, err = s.waitFor(ctx, deadline, "the AOF rewrite", aofIdle)
		if err != nil {
			return pending(StateAOFPending, "the AOF rewrite", err)
		}
		if st := p["aof_last_bgrewrite_status"]; st != "ok" {
			// Held up, not final: the saga retries it and pauses the
			// erasure, whose rerun rewrites again (the needles are kept).
			return store.ReclaimReport{}, fmt.Errorf("reclaim at %s: %w: the AOF rewrite failed (aof_last_bgrewrite_status:%s): see the server's log, then run the erasure again", s.loc, store.ErrBusy, st)
		}
		rep.Steps = append(rep.Steps, "BGREWRITEAOF (done, aof_last_bgrewrite_status:ok)")
		if s.o.DataDir != "" {
			if err := s.waitHistory(ctx, deadline); err != nil {
				return pending(StateAOFPending, "the removal of the AOF's history files", err)
			}
			rep.Steps = append(rep.Steps, "AOF manifest lists no history file")
		}
	} else {
		rep.Steps = append(rep.Steps, "AOF off (aof_enabled:0): no AOF to rewrite")
	}
	if skip, why := s.noRDB(ctx); skip {
		rep.Steps = append(rep.Steps, "no BGSAVE: "+why)
		return s.finish(rep), nil
	}
	started := time.Now().Unix()
	if err := s.startJob(ctx, deadline, "BGSAVE", func() error { return s.rdb.BgSave(ctx).Err() }, func(p persistence) bool { return rdbIdle(p) && aofIdle(p) }); err != nil {
		return pending(StateRDBPending, "the RDB save", err)
	}
	p, err = s.waitFor(ctx, deadline, "the RDB save", func(p persistence) bool {
		return rdbIdle(p) && (p.int("rdb_last_save_time") >= started || p["rdb_last_bgsave_status"] != "ok")
	})
	if err != nil {
		return pending(StateRDBPending, "the RDB save", err)
	}
	if st := p["rdb_last_bgsave_status"]; st != "ok" {
		return store.ReclaimReport{}, fmt.Errorf("reclaim at %s: %w: BGSAVE failed (rdb_last_bgsave_status:%s): see the server's log, then run the erasure again", s.loc, store.ErrBusy, st)
	}
	rep.Steps = append(rep.Steps, "BGSAVE (done, rdb_last_bgsave_status:ok)")
	return s.finish(rep), nil
}

// finish adds, without data_dir, the state saying the files were not read.
func (s *Store) finish(rep store.ReclaimReport) store.ReclaimReport {
	if s.o.DataDir == "" {
		rep.State = StateNoDataDir
		rep.Evidence = "the AOF and RDB were rewritten, but data_dir is not configured, so amnesia did not read them: the physical level is not measured (set data_dir to the server's directory, CONFIG GET dir, readable by amnesia)"
	}
	return rep
}

// noRDB reports whether there is no RDB file to rewrite: snapshots are off
// (CONFIG GET save is empty) and data_dir holds no file of the server's
// dbfilename. BGSAVE would then write a new file, a copy of every live
// record, where the operator keeps none. Without data_dir, or when the
// server refuses CONFIG GET, an old file may exist, and BGSAVE runs.
func (s *Store) noRDB(ctx context.Context) (bool, string) {
	if s.o.DataDir == "" {
		return false, ""
	}
	save, err := s.rdb.ConfigGet(ctx, "save").Result()
	if err != nil || save["save"] != "" {
		return false, ""
	}
	name := "dump.rdb"
	if m, err := s.rdb.ConfigGet(ctx, "dbfilename").Result(); err == nil && m["dbfilename"] != "" {
		name = m["dbfilename"]
	}
	if _, err := os.Stat(filepath.Join(s.o.DataDir, name)); !errors.Is(err, fs.ErrNotExist) {
		return false, ""
	}
	return true, "snapshots are off (save \"\") and data_dir holds no " + name
}

// startJob asks for a background job until the server accepts it: while
// another job runs, Redis refuses (or, for BGREWRITEAOF during a BGSAVE,
// schedules) it; Reclaim then waits for idle and asks again.
func (s *Store) startJob(ctx context.Context, deadline time.Time, what string, start func() error, idle func(persistence) bool) error {
	for {
		err := start()
		if err == nil {
			return nil
		}
		if !busy(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		if _, err := s.waitFor(ctx, deadline, what+" (waiting for the job already running)", idle); err != nil {
			return err
		}
	}
}

// aofDir returns the server's AOF directory under data_dir.
func (s *Store) aofDir(ctx context.Context) string {
	name := "appendonlydir"
	if m, err := s.rdb.ConfigGet(ctx, "appenddirname").Result(); err == nil && m["appenddirname"] != "" {
		name = m["appenddirname"]
	}
	return filepath.Join(s.o.DataDir, name)
}

// waitHistory waits until the AOF manifest lists no history file (type h):
// Redis 7 deletes the files a rewrite replaced in the background.
func (s *Store) waitHistory(ctx context.Context, deadline time.Time) error {
	dir := s.aofDir(ctx)
	for {
		h, err := historyFiles(dir)
		if err != nil {
			return err
		}
		if len(h) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d AOF history file(s) still listed in the manifest", errTimeout, len(h))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// historyFiles returns the files the manifest of dir marks as history.
func historyFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".manifest") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "type" && f[i+1] == "h" && len(f) > 1 {
					out = append(out, f[1])
				}
			}
		}
	}
	return out, nil
}

// RewriteAOF runs BGREWRITEAOF and waits, within reclaim_wait, for it to
// finish: the store's own compaction, without the RDB save that Reclaim
// adds (the residue benchmark's baseline B1).
func (s *Store) RewriteAOF(ctx context.Context) error {
	deadline := time.Now().Add(s.o.ReclaimWait)
	if err := s.startJob(ctx, deadline, "BGREWRITEAOF", func() error { return s.rdb.BgRewriteAOF(ctx).Err() }, aofIdle); err != nil {
		return err
	}
	_, err := s.waitFor(ctx, deadline, "the AOF rewrite", aofIdle)
	return err
}
