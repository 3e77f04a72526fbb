package bench

import (
	"fmt"
	"testing"
	"time"
)

// The step clock sums the saga's "done (duration)" progress lines per kind
// of step, skips replays from the journal, and divides by the erasures.
func TestStepClock(t *testing.T) {
	c := NewStepClock()
	fmt.Fprintf(c, "erasure er-1 of s: 3 artifacts in 1 stores\n  %-28s done (%s)\n  %-28s done (journal)\n", "evidence:docs", 1500*time.Microsecond, "delete:docs")
	fmt.Fprintf(c, "  %-28s done (%s)\n  %-28s done (%s)\n  %-28s waiting: PENDING-store-busy (x); 2s of 30s\n", "evidence:docs", 2500*time.Microsecond, "reclaim:docs", time.Duration(0), "reclaim:docs")
	// An erasure of a batch names itself first.
	fmt.Fprintf(c, "  er-0123456789abcdef01234567 %-28s done (%s)\n  er-0123456789abcdef01234567 %-28s done (journal)\n", "probe:docs", 4*time.Millisecond, "decide")
	got := c.PerErasure(2)
	if len(got) != 3 || got["evidence"] != 2 || got["reclaim"] != 0 || got["probe"] != 2 {
		t.Fatalf("per erasure %v, want evidence 2 ms, reclaim 0 ms and probe 2 ms only", got)
	}
	var none *StepClock
	if none.PerErasure(1) != nil {
		t.Fatal("a nil clock reports steps")
	}
	if (&env{}).progress() != nil {
		t.Fatal("an env without a clock gives a non-nil Progress writer")
	}
}
