package provenance

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// PostgresSettingNames are the PostgreSQL settings a results file records:
// the ones that change how long commits, checkpoints, VACUUM FULL and index
// builds take. fsync=off, the test services' default, makes every durable
// write cheaper than on a production server.
var PostgresSettingNames = []string{
	"fsync", "synchronous_commit", "full_page_writes", "wal_level",
	"shared_buffers", "maintenance_work_mem", "max_parallel_maintenance_workers", "max_wal_size",
}

// PostgresSettings asks the server at dsn for its version and the settings
// of PostgresSettingNames. The error never includes the DSN (it may hold a
// password).
func PostgresSettings(ctx context.Context, dsn string) (map[string]string, error) {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("server settings: cannot connect to the PostgreSQL server")
	}
	defer c.Close(context.Background())
	out := map[string]string{}
	var v string
	if err := c.QueryRow(ctx, `SHOW server_version`).Scan(&v); err != nil {
		return nil, fmt.Errorf("server settings: %w", err)
	}
	out["server"] = "PostgreSQL " + strings.Fields(v + " ?")[0]
	rows, err := c.Query(ctx, `SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1)`, PostgresSettingNames)
	if err != nil {
		return nil, fmt.Errorf("server settings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, val string
		if err := rows.Scan(&k, &val); err != nil {
			return nil, fmt.Errorf("server settings: %w", err)
		}
		out[k] = val
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("server settings: %w", err)
	}
	var ext string
	if err := c.QueryRow(ctx, `SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'), (SELECT default_version FROM pg_available_extensions WHERE name = 'vector'), '')`).Scan(&ext); err == nil && ext != "" {
		out["server"] += " + pgvector " + ext
	}
	return out, nil
}
