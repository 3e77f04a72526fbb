package main

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

// errNotReady is the preflight's refusal (exit 8).
var errNotReady = errors.New("a store of the trace is not ready")

// checkTimeout bounds the check of one store.
const checkTimeout = 20 * time.Second

// preflight runs the read-only readiness check (the one `amnesia check`
// runs) on every configured store the trace erases from, before anything
// is suppressed, deleted or logged. A store that is not ready stops the
// erasure with one line per store on w and exit 8, unless allowPartial:
// then it is left alone (never opened) and the erasure goes on with the
// others; the certificate reports it as not erased. Warnings (what cannot
// be verified) are printed and never stop anything.
func (a *app) preflight(ctx context.Context, w io.Writer, t *lineage.Trace, allowPartial bool) error {
	a.skip, a.allowPartial = nil, allowPartial
	var notReady []string
	seen := map[string]bool{}
	for _, p := range t.Plan {
		sc, err := a.dir.Config.Store(p.Store)
		if err != nil || seen[p.Store] {
			continue // not configured: reported OUT_OF_SCOPE by the erasure
		}
		seen[p.Store] = true
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		probs := a.dir.Config.CheckStore(cctx, sc)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
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
		reason := joinProblems(errs)
		notReady = append(notReady, sc.Name)
		fmt.Fprintf(w, "store %s (%s, %s): NOT READY: %s\n", sc.Name, sc.Type, a.dir.Config.StoreTarget(sc), reason)
		a.log.Warn("store not ready", "store", sc.Name, "trace", t.ID, "reason", reason, "allow_partial", allowPartial)
		if allowPartial {
			if a.skip == nil {
				a.skip = map[string]error{}
			}
			a.skip[sc.Name] = fmt.Errorf("%w: not ready: %s", store.ErrUnavailable, reason)
		}
	}
	if len(notReady) == 0 {
		return nil
	}
	if allowPartial {
		fmt.Fprintf(w, "--allow-partial: erasing without %s; the certificate will list its artifacts as not erased\n", strings.Join(notReady, ", "))
		return nil
	}
	return withCode(exitNotReady, fmt.Errorf("%w: %s (see 'amnesia check'); nothing was changed; fix it and run the command again, or pass --allow-partial to erase from the other stores only", errNotReady, strings.Join(notReady, ", ")))
}

func joinProblems(ps []store.Problem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}
