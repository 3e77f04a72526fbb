package service

import "github.com/prometheus/client_golang/prometheus"

// metrics are the service's Prometheus metrics (docs/serve.md lists them).
type metrics struct {
	erasures *prometheus.CounterVec   // by outcome: complete, incomplete, failed, released
	step     *prometheus.HistogramVec // by step: trace, erasure, callback
	queue    prometheus.Gauge         // erasure jobs pending or claimed in the ledger's queue
	overdue  prometheus.Gauge         // requests past their due date and not done
	captured prometheus.Counter       // lineage records accepted through Record
	requests *prometheus.GaugeVec     // requests by state
	// reverify counts scheduled re-verifications by outcome (verified,
	// reappeared, incomplete, failed); reappeared the records found again.
	reverify   *prometheus.CounterVec
	reappeared prometheus.Counter
	// latency is the delete persistence latency by store: from the
	// erasure's enqueue to the physical probe that found no bytes, for a
	// store whose every artifact the erasure verified physically.
	latency *prometheus.HistogramVec
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		erasures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amnesia_erasures_total", Help: "Erasures run by this process's worker, by outcome (complete, incomplete, failed, released)."}, []string{"outcome"}),
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "amnesia_step_duration_seconds", Help: "Duration of service steps: trace (a preview's trace), erasure (claim to end, preflight included), callback (one delivery attempt).",
			Buckets: prometheus.ExponentialBuckets(0.005, 3, 10)}, []string{"step"}),
		queue:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "amnesia_queue_depth", Help: "Erasure jobs pending or claimed in the ledger's queue (all processes), sampled by the worker loop."}),
		overdue:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "amnesia_requests_overdue", Help: "Erasure requests past their due date and not done, sampled by the worker loop."}),
		captured:   prometheus.NewCounter(prometheus.CounterOpts{Name: "amnesia_captured_records_total", Help: "Lineage records accepted through the API by this process (recorded or unchanged)."}),
		requests:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "amnesia_requests", Help: "Erasure requests by state, sampled by the worker loop."}, []string{"state"}),
		reverify:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amnesia_reverify_total", Help: "Scheduled re-verifications of erasure certificates run by this process, by outcome (verified, reappeared, incomplete, failed)."}, []string{"outcome"}),
		reappeared: prometheus.NewCounter(prometheus.CounterOpts{Name: "amnesia_reverify_reappeared_records_total", Help: "Erased records found again by this process's scheduled re-verifications (restored from a backup, re-ingested)."}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "amnesia_delete_persistence_latency_seconds", Help: "Delete persistence latency of the erasures run by this process's worker, by store: from the erasure's enqueue to the physical probe that found none of the subject's bytes, observed only for a store whose every artifact the erasure's certificate verifies at the physical level.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 12)}, []string{"store"}),
	}
	for _, o := range []string{"verified", "reappeared", "incomplete", "failed"} {
		m.reverify.WithLabelValues(o)
	}
	for _, o := range []string{"complete", "incomplete", "failed", "released"} {
		m.erasures.WithLabelValues(o)
	}
	for _, st := range []string{"trace", "erasure", "callback"} {
		m.step.WithLabelValues(st)
	}
	if r != nil {
		r.MustRegister(m.erasures, m.step, m.queue, m.overdue, m.captured, m.requests, m.reverify, m.reappeared, m.latency)
	}
	return m
}
