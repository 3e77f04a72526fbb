// Package queuestatus is the erasure queue at a glance: `amnesia status`
// and serve's GET /v1/status (docs/status.md). It reads the queue in one
// read-only transaction (lineage.QueueLister) and the journals of the
// latest finished erasures (for each store's latest delete persistence
// latency); it never claims, renews or changes anything.
//
// Nothing it reports holds personal data: subjects appear as their keyed
// reference (hmac:…), as in the rest of the CLI; the reason was checked
// for personal data when the erasure was queued; a job's error is shown
// only when it passes the same check.
package queuestatus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// Job states as listed. A pending job is "waiting" (or "retry-wait" until
// the retry delay of a release ends); a claimed one is "running" while its
// lease lasts and "lease-expired" after (its worker crashed or stalled; the
// next claim resumes it).
const (
	StateWaiting      = "waiting"
	StateRetryWait    = "retry-wait"
	StateRunning      = "running"
	StateLeaseExpired = "lease-expired"
	StateDone         = "done"
	StateFailed       = "failed"
)

// LatencyLookback is the most finished erasures whose journals are read for
// the latest delete persistence latency of each store.
const LatencyLookback = 20

// Options says what Read lists.
type Options struct {
	// Limit bounds the open jobs and the history listed (each); default 100.
	Limit int
	// All lists the finished jobs (done and failed) too, latest first.
	All bool
	// Durable is where the erasures' journals are kept (erasure.Env.Durable);
	// nil: no latency is read.
	Durable saga.Durable
	// Scopes, when not nil, restricts everything (counts and latencies
	// included) to the erasures of these scopes (serve: the token's).
	Scopes []string
}

// Counts are the whole queue's, not only the jobs listed.
type Counts struct {
	Waiting int `json:"waiting"` // pending jobs
	Running int `json:"running"` // claimed jobs (leases that ran out included)
	Done    int `json:"done"`
	Failed  int `json:"failed"`
	// Overdue: open jobs past their due date.
	Overdue int `json:"overdue"`
	// FailedUnresolved: failed jobs that no job of the same subject and
	// scope follows: none queued after it (the subject was not traced and
	// queued again) and none done after it was queued.
	FailedUnresolved int `json:"failed_unresolved"`
}

// Job is one listed job.
type Job struct {
	Erasure    string     `json:"erasure"`     // the erasure id (er-…), as erase and worker print it
	Trace      string     `json:"trace"`       // the trace id the job erases
	SubjectRef string     `json:"subject_ref"` // hmac:…, never the raw id
	Scope      string     `json:"scope"`
	Reason     string     `json:"reason"` // the ticket reference (checked for personal data at enqueue)
	State      string     `json:"state"`  // waiting, retry-wait, running, lease-expired, done, failed
	QueueState string     `json:"queue_state"`
	Due        *time.Time `json:"due_at"` // null: queued before due dates existed
	// DueInSeconds is the time left to the due date (negative: past it);
	// null without a due date or for a finished job.
	DueInSeconds *float64   `json:"due_in_s"`
	Overdue      bool       `json:"overdue"`
	EnqueuedAt   time.Time  `json:"enqueued_at"`
	AgeSeconds   float64    `json:"age_s"` // since it was queued
	Attempts     int        `json:"attempts"`
	Owner        string     `json:"owner"`  // the host that must run it ("" any)
	Worker       string     `json:"worker"` // the worker of the latest claim
	LeaseUntil   *time.Time `json:"lease_until"`
	AvailableAt  *time.Time `json:"retry_at"`    // retry-wait: when it is claimable again
	FinishedAt   *time.Time `json:"finished_at"` // done, failed
	Certificate  string     `json:"certificate"` // done: sha256 of the certificate envelope
	Error        string     `json:"error"`       // failed: why
	// FollowedBy (failed) is the erasure id of the latest job of the same
	// subject and scope queued after it, or done after it was queued
	// ("": none, the failure is unresolved; lineage.QueuedJob.FollowedBy).
	FollowedBy string `json:"followed_by"`
	// ContinuedAs is the id of the erasure the job's erasure went on as,
	// with a later trace of its subject (artifacts captured after the
	// request, worker.ContinuedTrace): its journal and certificate are
	// under that id. "": none (or Options.Durable not set).
	ContinuedAs string `json:"continued_as"`
}

// StoreLatency is a store's delete persistence latency in the latest
// finished erasure whose journal probed it.
type StoreLatency struct {
	Store     string     `json:"store"`
	State     string     `json:"state"` // saga.Latency*: clean, found, not-physical, no-physical-probe, not-probed
	LatencyMS *int64     `json:"latency_ms"`
	Erasure   string     `json:"erasure"`
	ProbedAt  *time.Time `json:"probed_at"`
}

// Report is the status of the queue.
type Report struct {
	Now    time.Time `json:"now"` // the ledger's clock at the read
	Counts Counts    `json:"counts"`
	// Attention: some job is overdue or failed unresolved (the command's
	// exit code then is not 0).
	Attention bool  `json:"attention"`
	Limit     int   `json:"limit"`
	Open      []Job `json:"open"`              // not finished, in claim order, at most Limit
	History   []Job `json:"history,omitempty"` // with All: finished, latest first, at most Limit
	// Latency per store, from the journals of the latest finished
	// erasures (at most LatencyLookback of them); LatencyUnread counts
	// those whose journal could not be read here.
	Latency       []StoreLatency `json:"delete_persistence_latency"`
	LatencyUnread int            `json:"latency_unread"`
}

// ErrNoQueue: the ledger has no erasure queue.
var ErrNoQueue = errors.New("the ledger has no erasure queue")

// Read reads the queue's status from l.
func Read(ctx context.Context, l lineage.Ledger, o Options) (*Report, error) {
	ql, ok := l.(lineage.QueueLister)
	if !ok {
		return nil, fmt.Errorf("%w (%T)", ErrNoQueue, l)
	}
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.Limit < 1 {
		return nil, errors.New("status: the limit must be at least 1")
	}
	read := o.Limit
	if o.Durable != nil && read < LatencyLookback {
		read = LatencyLookback
	}
	ls, err := ql.ListQueue(ctx, lineage.QueueListOptions{Limit: read, History: o.All || o.Durable != nil, Scopes: o.Scopes})
	if err != nil {
		return nil, err
	}
	now := ls.Now
	r := &Report{
		Now: now, Limit: o.Limit,
		Counts: Counts{Waiting: ls.Pending, Running: ls.Claimed, Done: ls.Done, Failed: ls.Failed,
			Overdue: ls.Overdue, FailedUnresolved: ls.FailedUnresolved},
		Open: []Job{}, Latency: []StoreLatency{},
	}
	r.Attention = r.Counts.Overdue > 0 || r.Counts.FailedUnresolved > 0
	for i := range ls.Open {
		if i == o.Limit {
			break
		}
		r.Open = append(r.Open, view(&ls.Open[i], now))
	}
	if o.All {
		r.History = []Job{}
		for i := range ls.History {
			if i == o.Limit {
				break
			}
			r.History = append(r.History, view(&ls.History[i], now))
		}
	}
	if o.Durable != nil {
		continued(ctx, o.Durable, r.Open, ls.Open)
		continued(ctx, o.Durable, r.History, ls.History)
		r.Latency, r.LatencyUnread = latest(ctx, o.Durable, ls.History)
	}
	return r, nil
}

// continued sets ContinuedAs of the listed jobs js (views of qs, in order)
// that a worker claimed (only a claim continues an erasure) and that are
// not failed. A ref not read is left out.
func continued(ctx context.Context, d saga.Durable, js []Job, qs []lineage.QueuedJob) {
	for i := range js {
		if qs[i].Attempts == 0 || qs[i].State == lineage.JobFailed {
			continue
		}
		if t, err := worker.ContinuedTraceIn(ctx, d, qs[i].ID); err == nil && t != nil {
			js[i].ContinuedAs = saga.ID(t.ID)
		}
	}
}

// latest returns each store's latency in the latest finished erasure (done
// jobs only, latest first) whose journal probed it.
func latest(ctx context.Context, d saga.Durable, hist []lineage.QueuedJob) ([]StoreLatency, int) {
	out := []StoreLatency{}
	seen := map[string]bool{}
	unread, n := 0, 0
	for i := range hist {
		j := &hist[i]
		if j.State != lineage.JobDone {
			continue
		}
		if n++; n > LatencyLookback {
			break
		}
		// A continuation of an incomplete erasure has its own id; its job
		// is the trace's, so its journal is not found under saga.ID. An
		// erasure that went on with a later trace of its subject is found
		// through worker.ContinuedTraceIn.
		id := saga.ID(j.ID)
		if t, err := worker.ContinuedTraceIn(ctx, d, j.ID); err == nil && t != nil {
			id = saga.ID(t.ID)
		}
		sl, err := saga.PersistenceLatency(ctx, d, id, j.EnqueuedAt)
		if err != nil {
			unread++
			continue
		}
		for _, s := range sl {
			if seen[s.Store] {
				continue
			}
			seen[s.Store] = true
			v := StoreLatency{Store: s.Store, State: s.State, Erasure: id}
			if !s.ProbedAt.IsZero() {
				at := s.ProbedAt.UTC()
				v.ProbedAt = &at
			}
			if s.State == saga.LatencyClean {
				ms := s.Latency.Milliseconds()
				v.LatencyMS = &ms
			}
			out = append(out, v)
		}
	}
	return out, unread
}

func view(q *lineage.QueuedJob, now time.Time) Job {
	j := Job{
		Erasure: saga.ID(q.ID), Trace: q.ID, SubjectRef: subjectRef(q.Subject), Scope: q.Scope,
		Reason: clean(q.Reason), QueueState: q.State, Overdue: q.Overdue(now),
		EnqueuedAt: q.EnqueuedAt.UTC(), AgeSeconds: seconds(now.Sub(q.EnqueuedAt)),
		Attempts: q.Attempts, Owner: q.Owner, Worker: clean(q.Worker), Certificate: q.Certificate,
		Error: clean(q.Error),
	}
	if q.FollowedBy != "" {
		j.FollowedBy = saga.ID(q.FollowedBy)
	}
	open := q.State == lineage.JobPending || q.State == lineage.JobClaimed
	if !q.Due.IsZero() {
		d := q.Due.UTC()
		j.Due = &d
		if open {
			left := seconds(q.Due.Sub(now))
			j.DueInSeconds = &left
		}
	}
	switch q.State {
	case lineage.JobPending:
		j.State = StateWaiting
		if q.AvailableAt.After(now) {
			j.State = StateRetryWait
			a := q.AvailableAt.UTC()
			j.AvailableAt = &a
		}
	case lineage.JobClaimed:
		j.State = StateRunning
		if !q.LeaseUntil.After(now) {
			j.State = StateLeaseExpired
		}
	case lineage.JobDone:
		j.State = StateDone
	case lineage.JobFailed:
		j.State = StateFailed
	default:
		j.State = q.State
	}
	if !q.LeaseUntil.IsZero() {
		l := q.LeaseUntil.UTC()
		j.LeaseUntil = &l
	}
	if !q.FinishedAt.IsZero() {
		f := q.FinishedAt.UTC()
		j.FinishedAt = &f
	}
	return j
}

func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// subjectRef is the keyed reference of a queued subject digest (hmac:…),
// as the rest of the CLI shows it; never the digest in full.
func subjectRef(hexKey string) string {
	k, err := subject.ParseKey(hexKey)
	if err != nil {
		return "(not a keyed digest)"
	}
	return k.Ref()
}

// withheld replaces a free text that looks like personal data.
const withheld = "(withheld: looks like personal data; see amnesia.log)"

// clean is a free text of the queue on one line, or withheld when it looks
// like personal data (subject.CheckFreeText). The queue refuses a reason
// that does; a worker's error names kinds and fields, never values, but is
// checked all the same.
func clean(s string) string {
	if s == "" {
		return ""
	}
	if subject.CheckFreeText("queue text", s) != nil {
		return withheld
	}
	return strings.Join(strings.Fields(s), " ")
}

// Write prints r as text: the counts, the open jobs, with All the history,
// and each store's latest delete persistence latency.
func Write(w io.Writer, r *Report) error {
	c := r.Counts
	fmt.Fprintf(w, "erasure queue at %s: %d waiting, %d running, %d done, %d failed", r.Now.UTC().Format(time.RFC3339), c.Waiting, c.Running, c.Done, c.Failed)
	if c.Failed > 0 {
		fmt.Fprintf(w, " (%d not queued again)", c.FailedUnresolved)
	}
	fmt.Fprintf(w, "; %d overdue\n", c.Overdue)
	if c.Overdue > 0 {
		fmt.Fprintf(w, "OVERDUE: %d erasure(s) past their due date and not done\n", c.Overdue)
	}
	if c.FailedUnresolved > 0 {
		fmt.Fprintf(w, "FAILED: %d erasure(s) failed and their subject was not queued again (nor erased by a job done since): trace it again and queue the new trace\n", c.FailedUnresolved)
	}
	if open := c.Waiting + c.Running; open > 0 {
		fmt.Fprintln(w)
		if len(r.Open) < open {
			fmt.Fprintf(w, "open erasures (first %d of %d, claim order):\n", len(r.Open), open)
		} else {
			fmt.Fprintln(w, "open erasures (claim order):")
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ERASURE\tSUBJECT\tSTATE\tDUE\tTIME LEFT\tQUEUED\tATTEMPTS\tWORKER\tLEASE UNTIL\tOWNER\tLAST ERROR")
		for _, j := range r.Open {
			st := j.State
			if j.State == StateRetryWait && j.AvailableAt != nil {
				st += " until " + j.AvailableAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s ago\t%d\t%s\t%s\t%s\t%s\n", erasureText(j), j.SubjectRef, st, dueText(j), leftText(j),
				age(j.AgeSeconds), j.Attempts, dash(j.Worker), timeText(j.LeaseUntil), dash(j.Owner), dash(j.Error))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if r.History != nil {
		fmt.Fprintln(w)
		if len(r.History) == 0 {
			fmt.Fprintln(w, "no finished erasures")
		} else {
			if fin := c.Done + c.Failed; len(r.History) < fin {
				fmt.Fprintf(w, "finished erasures (latest %d of %d):\n", len(r.History), fin)
			} else {
				fmt.Fprintln(w, "finished erasures (latest first):")
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ERASURE\tSUBJECT\tSTATE\tFINISHED\tDUE\tATTEMPTS\tWORKER\tCERTIFICATE / ERROR")
			for _, j := range r.History {
				st, what := j.State, j.Certificate
				if j.State == StateFailed {
					what = j.Error
					if j.FollowedBy != "" {
						st += " (followed by " + j.FollowedBy + ")"
					} else {
						st += " (not queued again)"
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", erasureText(j), j.SubjectRef, st, timeText(j.FinishedAt), dueText(j), j.Attempts, dash(j.Worker), dash(what))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	if len(r.Latency) > 0 || r.LatencyUnread > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "delete persistence latency, latest per store (request to the physical probe that found none of the subject's bytes):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STORE\tLATENCY\tSTATE\tERASURE\tPROBED")
		for _, l := range r.Latency {
			lat := "none"
			if l.LatencyMS != nil {
				lat = (time.Duration(*l.LatencyMS) * time.Millisecond).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Store, lat, l.State, l.Erasure, timeText(l.ProbedAt))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if r.LatencyUnread > 0 {
			fmt.Fprintf(w, "(%d finished erasure(s) without a journal readable here)\n", r.LatencyUnread)
		}
	}
	return nil
}

// erasureText is the job's erasure id, and the erasure it went on as.
func erasureText(j Job) string {
	if j.ContinuedAs == "" {
		return j.Erasure
	}
	return j.Erasure + " (as " + j.ContinuedAs + ")"
}

func dueText(j Job) string {
	if j.Due == nil {
		return "none"
	}
	return j.Due.Format(time.RFC3339)
}

func leftText(j Job) string {
	switch {
	case j.DueInSeconds == nil:
		return "-"
	case j.Overdue:
		return "OVERDUE by " + age(-*j.DueInSeconds)
	}
	return age(*j.DueInSeconds)
}

// age is a duration in seconds, rounded to the second (to the minute
// beyond an hour; in days and hours beyond two days).
func age(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= 48*time.Hour:
		d = d.Round(time.Hour)
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), (d%(24*time.Hour))/time.Hour)
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}

func timeText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
