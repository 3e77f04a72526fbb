package sqliteledger

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// Status reads, for each failed job, the jobs of its subject in any state
// (followsFailed): through the index queue_subject, not a scan of the
// queue per failed job.
func TestFollowsFailedUsesSubjectIndex(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.db.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT count(*) FROM queue q WHERE q.state = 'failed'
		AND NOT EXISTS (SELECT 1 FROM queue l WHERE `+followsFailed+`)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range plan {
		if strings.Contains(d, "SEARCH l USING INDEX queue_subject ") {
			found = true
		}
	}
	if !found {
		t.Errorf("the failed job's followers are not looked up through queue_subject:\n%s", strings.Join(plan, "\n"))
	}
}
