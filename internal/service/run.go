package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
)

// Callback delivery: attempts and backoff.
const (
	callbackAttempts = 8
	callbackBackoff  = 5 * time.Second
	callbackMaxWait  = time.Hour
)

// Run is the worker loop: it claims and runs queued erasures (the worker
// package, as `amnesia worker` does, so several serve processes on one
// PostgreSQL ledger erase each subject exactly once), keeps the requests'
// states in step with the queue, and sends the callbacks of ended requests.
// It returns when ctx ends; an erasure running then is handed back to the
// queue and resumes from its journal at the next claim.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	var werr error
	if !s.opts.NoWorker {
		var started sync.Map // trace id -> time claimed
		w := &worker.Worker{
			Env: s.env, Queue: s.queue, ID: s.opts.WorkerID, Host: s.opts.Host, Lease: s.opts.Lease, Poll: s.opts.PollInterval,
			Claimed: func(j *lineage.Job) {
				started.Store(j.ID, time.Now())
				s.setByTrace(ctx, j.ID, func(d *reqDoc) bool {
					if d.State == StateQueued || d.State == StatePaused {
						d.State, d.Error = StateRunning, ""
						return true
					}
					return false
				})
			},
			Finished: func(j *lineage.Job, res *saga.Result) {
				if t0, ok := started.LoadAndDelete(j.ID); ok {
					s.metrics.step.WithLabelValues("erasure").Observe(time.Since(t0.(time.Time)).Seconds())
				}
				outcome := "complete"
				if !res.Complete() {
					outcome = "incomplete"
				}
				s.metrics.erasures.WithLabelValues(outcome).Inc()
				sum := ""
				if b, err := s.env.Durable().Certificate(ctx, res.ID); err == nil {
					sum = saga.Digest(b)
				}
				complete := res.Complete()
				s.setByTrace(context.WithoutCancel(ctx), j.ID, func(d *reqDoc) bool {
					s.finish(d, res.ID, sum, &complete)
					return true
				})
			},
			Latency: func(_ *lineage.Job, _ *saga.Result, ls []saga.StoreLatency) {
				for _, l := range ls {
					if l.State == saga.LatencyClean {
						s.metrics.latency.WithLabelValues(l.Store).Observe(l.Latency.Seconds())
					}
				}
			},
			Failed: func(j *lineage.Job, err error) {
				started.Delete(j.ID)
				paused := errors.Is(err, saga.ErrPending) || errors.Is(err, erasure.ErrNotReady)
				if paused {
					s.metrics.erasures.WithLabelValues("released").Inc()
				}
				s.setByTrace(context.WithoutCancel(ctx), j.ID, func(d *reqDoc) bool {
					if paused && (d.State == StateRunning || d.State == StateQueued) {
						d.State, d.Error = StatePaused, "paused: "+pausedReason(err)
						return true
					}
					return false
				})
			},
		}
		if wait, max, margin := s.dir.Config.ErasureWindow(); wait > 0 {
			w.Window = &worker.Window{Wait: wait, Max: max, Margin: margin}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			werr = w.Run(ctx)
			if werr != nil && ctx.Err() == nil {
				// This host's configuration is no longer the installation's
				// (`amnesia config publish` elsewhere): the worker loop
				// claims nothing more; serve is no longer ready and records
				// no lineage (markStale), and answers the rest of its API.
				s.log.Error("worker loop stopped: it claims no more erasures", "err", werr)
				if errors.Is(werr, state.ErrConfigMismatch) {
					s.markStale(werr)
				}
			}
		}()
	}
	if every := s.reverifyEvery(); every > 0 {
		check := s.opts.ReverifyCheck
		if check <= 0 {
			check = min(every, time.Hour)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.reverifyLoop(ctx, every, check)
		}()
	}
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	for {
		if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("requests sync", "err", err)
		}
		// Without a worker loop (which compares before each claim) the
		// configuration version is compared here, once a poll.
		if s.opts.NoWorker && !s.stale.Load() {
			if err := s.checkConfig(ctx); err != nil && !errors.Is(err, state.ErrConfigMismatch) && ctx.Err() == nil {
				s.log.Error("configuration check", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return werr
		case <-tick.C:
		}
	}
}

// reverifyEvery is the re-verification schedule (0: none).
func (s *Service) reverifyEvery() time.Duration {
	if s.opts.ReverifyEvery > 0 {
		return s.opts.ReverifyEvery
	}
	return s.dir.Config.ReverifyEvery()
}

func pausedReason(err error) string {
	switch {
	case errors.Is(err, erasure.ErrNotReady):
		return "a store of the trace is not ready (see 'amnesia check'); retried in a minute"
	case errors.Is(err, saga.ErrPending):
		return "a store holds up the erasure's reclaim; retried in a minute"
	}
	return "retried in a minute"
}

// finish records a finished erasure in d and arms its callback.
func (s *Service) finish(d *reqDoc, erasureID, sum string, complete *bool) {
	d.State, d.Error = StateDone, ""
	d.ErasureID, d.CertificateID, d.CertificateSHA256, d.Complete = erasureID, erasureID, sum, complete
	s.armCallback(d)
	s.log.Info("erasure request done", "request", d.ID, "erasure", erasureID, "complete", complete != nil && *complete)
}

func (s *Service) armCallback(d *reqDoc) {
	if d.CallbackURL != "" && d.Callback == nil {
		d.Callback = &callbackDoc{State: "pending", NextAt: s.now().UTC()}
	}
}

// setByTrace applies fn to the requests of a trace that are not ended, and
// stores those fn changed (retrying on a concurrent change).
func (s *Service) setByTrace(ctx context.Context, traceID string, fn func(*reqDoc) bool) {
	docs, err := s.allDocs(ctx)
	if err != nil {
		s.log.Error("requests: list", "err", err)
		return
	}
	for _, d := range docs {
		if d.TraceID != traceID || d.State == StateDone || d.State == StateFailed {
			continue
		}
		for try := 0; try < 5; try++ {
			if !fn(d) {
				break
			}
			err := s.update(ctx, d)
			if err == nil || !errors.Is(err, ErrConflict) {
				if err != nil {
					s.log.Error("requests: update", "request", d.ID, "err", err)
				}
				break
			}
			if d, err = s.getDoc(ctx, d.ID); err != nil || d.State == StateDone || d.State == StateFailed {
				break
			}
		}
	}
}

// Sync brings the requests in step with the ledger's queue (an erasure run
// by another serve process or `amnesia worker`, or one that ended while this
// process was down), samples the gauges, and sends the callbacks that are
// due. Run calls it every PollInterval.
func (s *Service) Sync(ctx context.Context) error {
	jobs, err := s.queue.Jobs(ctx)
	if err != nil {
		return err
	}
	byTrace := make(map[string]lineage.Job, len(jobs))
	depth := 0
	for _, j := range jobs {
		byTrace[j.ID] = j
		if j.State == lineage.JobPending || j.State == lineage.JobClaimed {
			depth++
		}
	}
	s.metrics.queue.Set(float64(depth))
	docs, err := s.allDocs(ctx)
	if err != nil {
		return err
	}
	overdue := 0
	counts := map[string]int{}
	for _, d := range docs {
		j, ok := byTrace[d.TraceID]
		if ok && (d.State == StateQueued || d.State == StateRunning || d.State == StatePaused) {
			if s.syncJob(ctx, d, j) {
				if err := s.update(ctx, d); err != nil && !errors.Is(err, ErrConflict) {
					return err
				}
			}
		} else if !ok && d.State == StateQueued && s.now().Sub(d.UpdatedAt) > 30*time.Second {
			s.requeue(ctx, d)
		}
		if d.Callback != nil && d.Callback.State == "pending" && !s.now().Before(d.Callback.NextAt) {
			s.deliver(ctx, d)
		}
		counts[d.State]++
		if s.public(d).Overdue {
			overdue++
		}
	}
	s.metrics.overdue.Set(float64(overdue))
	for _, st := range []string{StateReceived, StatePreviewed, StateQueued, StateRunning, StateDone, StateFailed, StatePaused} {
		s.metrics.requests.WithLabelValues(st).Set(float64(counts[st]))
	}
	return nil
}

// requeue queues again the erasure of a confirmed request whose job is
// missing (the process that confirmed it stopped between the two writes).
func (s *Service) requeue(ctx context.Context, d *reqDoc) {
	t, err := s.env.LoadTrace(ctx, d.TraceID)
	if err == nil {
		err = worker.EnqueueDue(ctx, s.env, t, d.Reason, queueDue(d.DueAt))
	}
	if err == nil {
		s.log.Info("erasure request queued again", "request", d.ID, "trace", d.TraceID)
		return
	}
	d.State, d.Error = StateFailed, "could not queue the erasure: "+failReason(err.Error())+"; preview the request again"
	s.armCallback(d)
	if err := s.update(ctx, d); err != nil && !errors.Is(err, ErrConflict) {
		s.log.Error("requests: record a failed requeue", "request", d.ID, "err", err)
	}
}

// syncJob updates d from its job; it reports whether d changed.
func (s *Service) syncJob(ctx context.Context, d *reqDoc, j lineage.Job) bool {
	switch j.State {
	case lineage.JobClaimed:
		if d.State != StateRunning && j.LeaseUntil.After(time.Now()) {
			d.State = StateRunning
			return true
		}
	case lineage.JobDone:
		id, complete := s.certificateOf(ctx, j)
		s.finish(d, id, j.Certificate, complete)
		return true
	case lineage.JobFailed:
		d.State, d.Error = StateFailed, "the erasure cannot run: "+failReason(j.Error)
		s.metrics.erasures.WithLabelValues("failed").Inc()
		s.armCallback(d)
		return true
	}
	return false
}

// failReason is the class of a failed job, without its details.
func failReason(msg string) string {
	switch {
	case strings.Contains(msg, "stale") || strings.Contains(msg, "no longer matches"):
		return "the ledger changed since the trace; preview the request again"
	case strings.Contains(msg, "already erased"):
		return "every recorded artifact is already erased"
	case strings.Contains(msg, "no lineage"):
		return "no lineage is recorded for this subject"
	case strings.Contains(msg, "personal data"):
		return "the reason looks like personal data"
	}
	return "see the worker's log (amnesia.log) for the trace"
}

// certificateOf finds the certificate a done job published (its digest is
// the job's): the erasure of its trace, or a continuation of it. It reads
// them where erasures keep them (erasure.Env.Durable: the ledger, or the
// state directory).
func (s *Service) certificateOf(ctx context.Context, j lineage.Job) (id string, complete *bool) {
	dur := s.env.Durable()
	try := func(cid string) bool {
		b, err := dur.Certificate(ctx, cid)
		if err != nil || saga.Digest(b) != j.Certificate {
			return false
		}
		if st, err := bundleStatement(b); err == nil {
			c := st.Predicate.Complete
			complete = &c
		}
		id = cid
		return true
	}
	if try(saga.ID(j.ID)) {
		return id, complete
	}
	// The erasure went on with a later trace of the subject (artifacts
	// captured after the request): worker.ContinuedTrace.
	if t, err := worker.ContinuedTrace(ctx, s.env, j.ID); err == nil && t != nil && try(saga.ID(t.ID)) {
		return id, complete
	}
	ids, _ := dur.Certificates(ctx)
	for _, cid := range ids {
		if try(cid) {
			return id, complete
		}
	}
	return "", nil
}

// callbackBody is what amnesia POSTs to a request's callback URL.
type callbackBody struct {
	RequestID         string `json:"request_id"`
	Status            string `json:"status"` // completed or failed
	CertificateSHA256 string `json:"certificate_sha256,omitempty"`
	Complete          *bool  `json:"complete,omitempty"`
	Error             string `json:"error,omitempty"`
}

// deliver sends d's callback once: the attempt is claimed first (compare
// and set), so of several serve processes one sends it.
func (s *Service) deliver(ctx context.Context, d *reqDoc) {
	c := d.Callback
	c.Attempts++
	c.NextAt = s.now().UTC().Add(min(callbackMaxWait, callbackBackoff<<min(c.Attempts, 20)))
	if s.update(ctx, d) != nil {
		return // another process claimed this attempt
	}
	body := callbackBody{RequestID: d.ExternalRef, Status: "completed", CertificateSHA256: d.CertificateSHA256, Complete: d.Complete}
	if body.RequestID == "" {
		body.RequestID = d.ID
	}
	if d.State == StateFailed {
		body.Status, body.Error = "failed", d.Error
	}
	b, _ := json.Marshal(body)
	start := time.Now()
	err := s.post(ctx, d.CallbackURL, b)
	s.metrics.step.WithLabelValues("callback").Observe(time.Since(start).Seconds())
	switch {
	case err == nil:
		c.State, c.LastError = "delivered", ""
	case c.Attempts >= callbackAttempts:
		c.State, c.LastError = "gave_up", err.Error()
	default:
		c.LastError = err.Error()
	}
	s.log.Info("request callback", "request", d.ID, "attempt", c.Attempts, "state", c.State, "err", c.LastError)
	if err := s.update(ctx, d); err != nil {
		s.log.Error("request callback: record the delivery", "request", d.ID, "err", err)
	}
}

func (s *Service) post(ctx context.Context, url string, body []byte) error {
	if len(s.secret) == 0 {
		return errors.New("no serve.webhook_secret to sign the callback with")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return errors.New("the callback URL does not parse")
	}
	ts, sig := SignWebhook(s.secret, s.now(), body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
	resp, err := s.client.Do(req)
	if err != nil {
		return errors.New("the callback URL is not reachable")
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the callback URL answered %d", resp.StatusCode)
	}
	return nil
}
