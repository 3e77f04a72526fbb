package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// TestMain doubles as the model benchmark's retrain command.
func TestMain(m *testing.M) {
	if ok, err := RunNgramTrain(os.Args); ok {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestModelSmoke(t *testing.T) {
	r, err := Model(context.Background(), ModelOptions{Shards: 2, People: 6, RowsEach: 2, Erasures: 2, References: 9, Self: os.Args[0], Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Erasures) != 2 || !r.Smoke {
		t.Fatalf("%+v", r)
	}
	// A canary that was never trained ranks first among its references by
	// chance (probability ≤ 1/(m+1)): the smoke run does not require that
	// none is flagged after, only that none is extracted.
	for _, e := range r.Erasures {
		if (e.Outcome != "VERIFIED" && e.Outcome != "RESIDUAL") || e.ShardsRetrained != 1 || e.RowsRemoved != 3 {
			t.Fatalf("erasure %+v power %+v", e, r.Power)
		}
	}
	if r.Power.Canaries != 2 || r.Power.ExtractedBefore != 2 || r.Power.ExtractedAfter != 0 || r.Power.FPRPerCanary != 0.1 || r.Power.ControlsExtracted != r.Power.Controls {
		t.Fatalf("power %+v", r.Power)
	}
}
