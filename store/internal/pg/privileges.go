package pg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Privileges is what the connected role may do on the server and on the
// store's table, read once when the store opens (Info must not do I/O).
type Privileges struct {
	Role          string
	Superuser     bool
	ServerVersion int  // server_version_num, e.g. 150020
	Maintain      bool // owns the table (or is a member of its owner), MAINTAIN on 17+, or superuser: VACUUM FULL, REINDEX
	Checkpoint    bool // superuser or pg_checkpoint (15+)
	ReadFiles     bool // EXECUTE on pg_read_binary_file(text, bigint, bigint, boolean)
	ListWAL       bool // EXECUTE on pg_ls_waldir()
	SwitchWAL     bool // EXECUTE on pg_switch_wal()
	Pgstattuple   bool // extension installed and EXECUTE on pgstattuple(regclass)
	DataDir       bool // Options.DataDir is set, readable, and holds this table's files
	DataDirReason string
}

// Physical reports whether the physical probe can run: the relation files
// must be readable (through SQL or the data directory) and a CHECKPOINT must
// be possible first, or the files would not show what the server holds.
func (p Privileges) Physical() bool { return (p.ReadFiles || p.DataDir) && p.Checkpoint }

// MissingPhysical names the grants the physical probe lacks ("" if none).
func (p Privileges) MissingPhysical() string {
	if p.Physical() {
		return ""
	}
	r := Display(p.Role)
	var need []string
	if !p.ReadFiles && !p.DataDir {
		need = append(need, "EXECUTE on pg_read_binary_file (GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint, boolean) TO "+r+"; membership in pg_read_server_files alone does not grant it)")
		if p.DataDirReason != "" {
			need[len(need)-1] += " or a readable data_dir (" + p.DataDirReason + ")"
		}
	}
	if !p.Checkpoint {
		if p.ServerVersion >= 150000 {
			need = append(need, "pg_checkpoint (GRANT pg_checkpoint TO "+r+")")
		} else {
			need = append(need, "CHECKPOINT, which before PostgreSQL 15 only a superuser may run")
		}
	}
	return "role " + r + " needs " + strings.Join(need, " and ") + ", or superuser, for the physical probe"
}

// MissingMaintain names what reclaim lacks on t ("" if nothing).
func (p Privileges) MissingMaintain(t Table) string {
	if p.Maintain {
		return ""
	}
	r := Display(p.Role)
	s := "role " + r + " needs ownership of " + t.String() + " (ALTER TABLE " + t.String() + " OWNER TO " + r + ")"
	if p.ServerVersion >= 170000 {
		s += " or MAINTAIN on it (GRANT MAINTAIN ON " + t.String() + " TO " + r + ")"
	}
	return s + ", or superuser, for VACUUM FULL and REINDEX"
}

// ReadPrivileges reads the role's privileges for t. dataDir, when set, is
// checked to be readable and to hold t's main relation file.
func ReadPrivileges(ctx context.Context, c *pgx.Conn, t Table, dataDir string) (Privileges, error) {
	var p Privileges
	err := c.QueryRow(ctx, `SELECT current_user::text, r.rolsuper, current_setting('server_version_num')::int,
		pg_has_role(cl.relowner, 'USAGE') AND NOT EXISTS (SELECT 1 FROM pg_partition_tree(cl.oid) pt JOIN pg_class pc ON pc.oid = pt.relid WHERE NOT pg_has_role(pc.relowner, 'USAGE')),
		CASE WHEN to_regrole('pg_checkpoint') IS NULL THEN false ELSE pg_has_role('pg_checkpoint', 'USAGE') END,
		has_function_privilege('pg_read_binary_file(text,bigint,bigint,boolean)', 'EXECUTE'),
		has_function_privilege('pg_ls_waldir()', 'EXECUTE'),
		has_function_privilege('pg_switch_wal()', 'EXECUTE'),
		COALESCE(has_function_privilege(to_regprocedure('pgstattuple(regclass)'), 'EXECUTE'), false)
		FROM pg_roles r, pg_class cl WHERE r.rolname = current_user AND cl.oid = $1::text::regclass`, t.Ident()).
		Scan(&p.Role, &p.Superuser, &p.ServerVersion, &p.Maintain, &p.Checkpoint, &p.ReadFiles, &p.ListWAL, &p.SwitchWAL, &p.Pgstattuple)
	if err != nil {
		return p, fmt.Errorf("read privileges: %w", err)
	}
	if p.Superuser {
		p.Maintain, p.Checkpoint = true, true
	}
	if !p.Maintain && p.ServerVersion >= 170000 {
		if err := c.QueryRow(ctx, `SELECT has_table_privilege($1::text::regclass, 'MAINTAIN')`, t.Ident()).Scan(&p.Maintain); err != nil {
			return p, fmt.Errorf("read privileges: %w", err)
		}
	}
	if dataDir != "" {
		var rel string
		// A partitioned table has no files: its first partition's are checked.
		err := c.QueryRow(ctx, `SELECT pg_relation_filepath(l.oid) FROM `+leavesSQL+` l(oid) ORDER BY l.oid LIMIT 1`, t.Ident()).Scan(&rel)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			p.DataDirReason = "the partitioned table has no partition, so no file to check data_dir with"
		case err != nil:
			return p, fmt.Errorf("read privileges: %w", err)
		default:
			p.DataDir, p.DataDirReason = checkDataDir(dataDir, rel)
		}
	}
	return p, nil
}

func checkDataDir(dir, rel string) (bool, string) {
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		return false, "data_dir has no readable PG_VERSION"
	}
	f, err := os.Open(filepath.Join(dir, rel))
	if errors.Is(err, os.ErrNotExist) {
		return false, "data_dir does not hold this table's files: is it this server's data directory?"
	}
	if err != nil {
		return false, "data_dir files are not readable by this process"
	}
	f.Close()
	return true, ""
}
