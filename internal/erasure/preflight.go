package erasure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// ErrNotReady matches, with errors.Is, the preflight's refusal
// (*NotReadyError): `amnesia forget` and `erase` exit 8.
var ErrNotReady = errors.New("a store of the trace is not ready")

// NotReadyError is the preflight's refusal: stores of the trace are not
// ready, and nothing was changed.
type NotReadyError struct {
	Stores []string // the stores not ready, in the trace's order
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("%v: %s (see 'amnesia check'); nothing was changed; fix it and run the command again, or pass --allow-partial to erase from the other stores only", ErrNotReady, strings.Join(e.Stores, ", "))
}

// Is makes errors.Is(err, ErrNotReady) true.
func (e *NotReadyError) Is(target error) bool { return target == ErrNotReady }

// CheckTimeout bounds the preflight's check of one store.
const CheckTimeout = 20 * time.Second

// Preflight runs the read-only readiness check (the one `amnesia check`
// runs) on every configured store the trace erases from, before anything
// is suppressed, deleted or logged. A store that is not ready stops the
// erasure (a *NotReadyError) with one line per store on w, unless
// allowPartial: then it is returned in skip, to be left alone (never
// opened, Options.Skip) while the erasure goes on with the others; the
// certificate reports it as not erased. Warnings (what cannot be verified)
// are written to w and never stop anything.
func (e *Env) Preflight(ctx context.Context, w io.Writer, t *lineage.Trace, allowPartial bool) (skip map[string]error, err error) {
	if w == nil {
		w = io.Discard
	}
	var notReady []string
	seen := map[string]bool{}
	for _, p := range t.Plan {
		sc, err := e.Dir.Config.Store(p.Store)
		if err != nil || seen[p.Store] {
			continue // not configured: reported OUT_OF_SCOPE by the erasure
		}
		seen[p.Store] = true
		cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
		probs := e.Dir.Config.CheckStore(cctx, sc)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for _, pr := range probs {
			if pr.Severity == store.SeverityWarning {
				fmt.Fprintf(w, "store %s: warning: %s\n", sc.Name, pr)
			}
		}
		errs := store.Errors(probs)
		if len(errs) == 0 {
			continue
		}
		reason := JoinProblems(errs)
		notReady = append(notReady, sc.Name)
		fmt.Fprintf(w, "store %s (%s, %s): NOT READY: %s\n", sc.Name, sc.Type, e.Dir.Config.StoreTarget(sc), reason)
		e.Logger().Warn("store not ready", "store", sc.Name, "trace", t.ID, "reason", reason, "allow_partial", allowPartial)
		if allowPartial {
			if skip == nil {
				skip = map[string]error{}
			}
			skip[sc.Name] = fmt.Errorf("%w: not ready: %s", store.ErrUnavailable, reason)
		}
	}
	if len(notReady) == 0 {
		return nil, nil
	}
	if allowPartial {
		fmt.Fprintf(w, "--allow-partial: erasing without %s; the certificate will list its artifacts as not erased\n", strings.Join(notReady, ", "))
		return skip, nil
	}
	return nil, &NotReadyError{Stores: notReady}
}

// JoinProblems is the one-line form of a store's problems (as `amnesia
// check` and the preflight print them).
func JoinProblems(ps []store.Problem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}
