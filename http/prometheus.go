package http

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/projections"
)

// Metrics is the node's Prometheus registry, served at GET /v1/metrics. The
// parts of the node that the http package does not own report into it through
// plain hooks: the log's group commits (eventlog.Options.OnGroupCommit) and the
// registry client's attempts (servicenet.Config.Observe), so neither eventlog
// nor servicenet knows Prometheus. docs/metrics.md lists every series.
type Metrics struct {
	reg *prometheus.Registry

	appended     prometheus.Counter
	groupEvents  prometheus.Histogram
	fsync        prometheus.Histogram
	commitErrors prometheus.Counter

	httpDuration *prometheus.HistogramVec

	registryCalls    *prometheus.CounterVec
	registryDuration *prometheus.HistogramVec

	cosigned prometheus.Counter // cosignatures this node gave as a witness
}

// Buckets. A durable append answers in about a millisecond and most reads in
// well under one, so the HTTP buckets start at 100 µs; Prometheus's default
// buckets start at 5 ms and would put nearly every request in the first.
var (
	httpBuckets     = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	fsyncBuckets    = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
	groupBuckets    = prometheus.ExponentialBuckets(1, 2, 13) // 1 … 4096, the most events the log commits under one fsync
	registryBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30}
)

// NewMetrics returns a registry with the Go runtime's and the process's own
// collectors and the node's series, all at zero.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		appended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "civnode_eventlog_appended_events_total",
			Help: "Events appended to the chain and made durable since the node started.",
		}),
		groupEvents: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "civnode_eventlog_group_commit_events",
			Help:    "Events per group commit: one Pebble batch and one fsync cover a whole group.",
			Buckets: groupBuckets,
		}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "civnode_eventlog_fsync_seconds",
			Help:    "Time to make one group durable: its Pebble batch write and WAL fsync.",
			Buckets: fsyncBuckets,
		}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "civnode_eventlog_commit_failures_total",
			Help: "Group commits that failed; the first one stops the node taking writes (fail-stop).",
		}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "civnode_http_request_duration_seconds",
			Help:    "HTTP requests by method, route pattern and status, from the first byte read to the last written.",
			Buckets: httpBuckets,
		}, []string{"method", "route", "status"}),
		registryCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "civnode_registry_calls_total",
			Help: "Attempts to call the agent registry, by operation and outcome; a retried read counts each attempt.",
		}, []string{"op", "outcome"}),
		registryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "civnode_registry_call_duration_seconds",
			Help:    "Time of one attempt to call the agent registry, by operation.",
			Buckets: registryBuckets,
		}, []string{"op"}),
		cosigned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "civnode_witness_cosignatures_given_total",
			Help: "Checkpoints of other logs this node cosigned as a witness (POST /v1/witness/add-checkpoint) since it started.",
		}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.appended, m.groupEvents, m.fsync, m.commitErrors,
		m.httpDuration, m.registryCalls, m.registryDuration, m.cosigned,
	)
	return m
}

// SetBuildInfo adds civnode_build_info, the Prometheus convention for a
// binary's build: one series, value 1, whose labels say what runs, so that a
// query can join it or an alert can spot two versions in a fleet. cmd reads the
// build (runtime/debug and its link-time overrides); a second call is an error.
func (m *Metrics) SetBuildInfo(version, commit, goVersion string) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "civnode_build_info",
		Help:        "The running binary's build: always 1, with its version, commit and Go version as labels.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": goVersion},
	})
	g.Set(1)
	if err := m.reg.Register(g); err != nil {
		return fmt.Errorf("register build info: %w", err)
	}
	return nil
}

// ObserveGroupCommit is the log's OnGroupCommit hook.
func (m *Metrics) ObserveGroupCommit(g eventlog.GroupCommit) {
	if g.Err != nil {
		m.commitErrors.Inc()
		return
	}
	m.appended.Add(float64(g.Events))
	m.groupEvents.Observe(float64(g.Events))
	m.fsync.Observe(g.Duration.Seconds())
}

// ObserveRegistry is the registry client's Observe hook.
func (m *Metrics) ObserveRegistry(a servicenet.Attempt) {
	m.registryCalls.WithLabelValues(a.Op, a.Outcome).Inc()
	m.registryDuration.WithLabelValues(a.Op).Observe(a.Duration.Seconds())
}

// observeRequest records one answered request. Only registered routes are
// named; anything else, whatever path a client tried, is "unmatched", so a
// scan of random paths cannot grow the series without bound.
func (m *Metrics) observeRequest(method, route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
		method = knownMethod(method)
	}
	m.httpDuration.WithLabelValues(method, route, strconv.Itoa(status)).Observe(d.Seconds())
}

// routeMetrics is the duration histogram of one registered route and method,
// with its observer for each status looked up once: WithLabelValues hashes
// the three labels and formats the status on every call.
type routeMetrics struct {
	m             *Metrics
	method, route string
	byStatus      sync.Map // int → prometheus.Observer
	quiet         bool     // log its requests at Debug (routeQuiet)
}

// route returns the metrics of requests to the pattern route by method.
func (m *Metrics) route(method, route string) *routeMetrics {
	return &routeMetrics{m: m, method: method, route: route}
}

// observe records one answered request of the route.
func (rm *routeMetrics) observe(status int, d time.Duration) {
	o, ok := rm.byStatus.Load(status)
	if !ok {
		o, _ = rm.byStatus.LoadOrStore(status, rm.m.httpDuration.WithLabelValues(rm.method, rm.route, strconv.Itoa(status)))
	}
	o.(prometheus.Observer).Observe(d.Seconds())
}

// knownMethod keeps the methods of RFC 9110 and PATCH and names any other
// "OTHER": the method of an unmatched request is the client's free text.
func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// serverCollector reports what the server and its log know at scrape time:
// the tip, health, the store's upkeep, the stream's clients and the read
// models' skipped events.
// Reading them then costs nothing between scrapes.
type serverCollector struct {
	s *Server

	tip, healthy, clients, drops, published *prometheus.Desc
	held, behind                            *prometheus.Desc
	budgetUsed, budgetSize, budgetRefused   *prometheus.Desc
	skipped                                 *prometheus.Desc
	leafUp, leafSince                       *prometheus.Desc
	// The store's upkeep (eventlog.StoreStats).
	storeDisk, storeDebt, storeScore, storeL0    *prometheus.Desc
	storeFlushes, storeCompactions, storeCompSec *prometheus.Desc
	storeStalls, storeStallSec                   *prometheus.Desc
}

func newServerCollector(s *Server) *serverCollector {
	return &serverCollector{
		s:       s,
		tip:     prometheus.NewDesc("civnode_eventlog_tip_seq", "Seq of the newest durable event.", nil, nil),
		healthy: prometheus.NewDesc("civnode_eventlog_healthy", "1 while the log accepts writes, 0 once it has failed (GET /v1/health answers 503).", nil, nil),
		held: prometheus.NewDesc("civnode_eventlog_writes_held",
			"1 while the fork guard holds the node's writes (503 behind_published): a checkpoint of its own key that its chain does not cover was seen, or a recovered data dir waits for its witnesses.", nil, nil),
		behind: prometheus.NewDesc("civnode_eventlog_behind_published_events",
			"Events of the largest checkpoint of the node's own key seen elsewhere that its chain lacks; 0 when it covers them.", nil, nil),
		clients: prometheus.NewDesc("civnode_stream_clients", "WebSocket clients of GET /v1/stream connected now.", nil, nil),
		drops: prometheus.NewDesc("civnode_stream_dropped_clients_total",
			"Stream clients closed for falling behind: their subscription overflowed or one write timed out.", nil, nil),
		published: prometheus.NewDesc("civnode_stream_published_events_total", "Events published on the embedded NATS server.", nil, nil),
		budgetUsed: prometheus.NewDesc("civnode_http_response_budget_used_bytes",
			"Bytes of response bodies held in memory now, against the node-wide response budget.", nil, nil),
		budgetSize: prometheus.NewDesc("civnode_http_response_budget_bytes", "The node-wide response budget (--response-budget).", nil, nil),
		leafUp: prometheus.NewDesc("civnode_nats_leaf_up",
			"1 while the leaf link to the configured remote (--nats-leaf) is up, 0 while it is down.", []string{"remote"}, nil),
		leafSince: prometheus.NewDesc("civnode_nats_leaf_last_change_timestamp_seconds",
			"When the leaf link last went up or down (Unix time); the node's start while it has never been up.", []string{"remote"}, nil),
		budgetRefused: prometheus.NewDesc("civnode_http_response_budget_refusals_total",
			"Reads answered 503 busy because the response budget could not admit them in time.", nil, nil),
		storeDisk: prometheus.NewDesc("civnode_store_disk_bytes",
			"Space the event log's store takes on disk: sstables, write-ahead logs and manifests.", nil, nil),
		storeDebt: prometheus.NewDesc("civnode_store_compaction_debt_bytes",
			"Pebble's estimate of the bytes compactions would rewrite to bring the store to a stable shape, counting all of L0 as compacted into the level below; it grows with the store and is not a backlog.", nil, nil),
		storeScore: prometheus.NewDesc("civnode_store_compaction_score",
			"The highest of the store's level compaction scores: at 1 or more a level is waiting for a compaction; staying over 1 means compactions do not keep up.", nil, nil),
		storeL0: prometheus.NewDesc("civnode_store_l0_sublevels",
			"Depth of the store's level 0; Pebble compacts it at 4 and stalls writes at 12.", nil, nil),
		storeFlushes:     prometheus.NewDesc("civnode_store_flushes_total", "Memtable flushes since the node started.", nil, nil),
		storeCompactions: prometheus.NewDesc("civnode_store_compactions_total", "Compactions since the node started.", nil, nil),
		storeCompSec:     prometheus.NewDesc("civnode_store_compaction_seconds_total", "Time the compactions since the node started took.", nil, nil),
		storeStalls: prometheus.NewDesc("civnode_store_write_stalls_total",
			"Times the store held writes back for its flushes or level 0 to catch up, since the node started.", nil, nil),
		storeStallSec: prometheus.NewDesc("civnode_store_write_stall_seconds_total",
			"Time writes were held back by the store, the stall under way included.", nil, nil),
		skipped: prometheus.NewDesc("civnode_read_model_skipped_events_total",
			"Events a read model could not apply, by model; 0 on a chain civnode's commands wrote, anything else is a bug.",
			[]string{"model"}, nil),
	}
}

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.tip
	ch <- c.healthy
	ch <- c.held
	ch <- c.behind
	for _, d := range c.storeDescs() {
		ch <- d
	}
	if c.s.budget != nil {
		ch <- c.budgetUsed
		ch <- c.budgetSize
		ch <- c.budgetRefused
	}
	if c.s.streams.stream != nil {
		ch <- c.clients
		ch <- c.drops
		ch <- c.published
		ch <- c.leafUp
		ch <- c.leafSince
	}
	if c.s.identities != nil {
		ch <- c.skipped
	}
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.tip, prometheus.GaugeValue, float64(c.s.log.Tip().Seq))
	healthy := 1.0
	if c.s.log.Healthy() != nil {
		healthy = 0
	}
	ch <- prometheus.MustNewConstMetric(c.healthy, prometheus.GaugeValue, healthy)
	held, behind := 0.0, 0.0
	if b := c.s.log.Held(); b != nil {
		held = 1
		behind = float64(max(0, b.Size-b.Tip))
	}
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, held)
	ch <- prometheus.MustNewConstMetric(c.behind, prometheus.GaugeValue, behind)
	c.collectStore(ch)
	if b := c.s.budget; b != nil {
		ch <- prometheus.MustNewConstMetric(c.budgetUsed, prometheus.GaugeValue, float64(b.inUse.Load()))
		ch <- prometheus.MustNewConstMetric(c.budgetSize, prometheus.GaugeValue, float64(b.size))
		ch <- prometheus.MustNewConstMetric(c.budgetRefused, prometheus.CounterValue, float64(b.refused.Load()))
	}
	if st := c.s.streams.stream; st != nil {
		status := st.Status()
		ch <- prometheus.MustNewConstMetric(c.clients, prometheus.GaugeValue, float64(status.StreamClients))
		ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(status.SlowDrops+c.s.streams.writeDrops.Load()))
		ch <- prometheus.MustNewConstMetric(c.published, prometheus.CounterValue, float64(status.Published))
		if link, ok := st.LeafLink(); ok {
			up := 0.0
			if link.Up {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(c.leafUp, prometheus.GaugeValue, up, link.Remote)
			ch <- prometheus.MustNewConstMetric(c.leafSince, prometheus.GaugeValue, float64(link.Since.UnixNano())/1e9, link.Remote)
		}
	}
	// A server with read models (Options.Identities) has the log's model
	// space, where every model keeps its count (projections.Models).
	if c.s.identities != nil {
		skipped, err := projections.Skipped(c.s.log)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.skipped, err)
			return
		}
		for _, m := range projections.Models() {
			ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(skipped[m.Name]), m.Name)
		}
	}
}

func (c *serverCollector) storeDescs() []*prometheus.Desc {
	return []*prometheus.Desc{c.storeDisk, c.storeDebt, c.storeScore, c.storeL0, c.storeFlushes, c.storeCompactions, c.storeCompSec, c.storeStalls, c.storeStallSec}
}

// collectStore reports the store's upkeep, read from Pebble at scrape time.
func (c *serverCollector) collectStore(ch chan<- prometheus.Metric) {
	st, err := c.s.log.StoreStats()
	if err != nil {
		// The log is closed: the node is stopping.
		for _, d := range c.storeDescs() {
			ch <- prometheus.NewInvalidMetric(d, err)
		}
		return
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.storeDisk, float64(st.DiskBytes))
	gauge(c.storeDebt, float64(st.CompactionDebtBytes))
	gauge(c.storeScore, st.CompactionScore)
	gauge(c.storeL0, float64(st.L0Sublevels))
	counter(c.storeFlushes, float64(st.Flushes))
	counter(c.storeCompactions, float64(st.Compactions))
	counter(c.storeCompSec, st.CompactionTime.Seconds())
	counter(c.storeStalls, float64(st.WriteStalls))
	counter(c.storeStallSec, st.WriteStallTime.Seconds())
}

// registerServer adds the server's own collector to its metrics. A Metrics
// given to a second server (tests) keeps the first one's; the second is
// logged, not fatal.
func (s *Server) registerServer() {
	s.metricsHandler = promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      promErrorLog{s},
		// A scrape is a few kilobytes over loopback or a LAN; an
		// uncompressed answer is what promtool and curl read as is.
		DisableCompression: true,
	})
	if err := s.metrics.reg.Register(newServerCollector(s)); err != nil {
		s.logger.Warn("metrics already hold another server's collector", logkey.Err, err)
	}
	if s.witnesses != nil {
		if err := s.metrics.reg.Register(newWitnessCollector(s.witnesses)); err != nil {
			s.logger.Warn("metrics already hold another server's witness collector", logkey.Err, err)
		}
	}
	if s.mirror != nil {
		if err := s.metrics.reg.Register(newMirrorCollector(s.mirror)); err != nil {
			s.logger.Warn("metrics already hold another server's mirror collector", logkey.Err, err)
		}
	}
}

// promErrorLog logs what promhttp could not gather, at Warn.
type promErrorLog struct{ s *Server }

func (l promErrorLog) Println(v ...any) { l.s.logger.Warn("gather metrics", logkey.Err, v) }

// handlePrometheus answers GET /v1/metrics in the Prometheus text format.
func (s *Server) handlePrometheus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	w.Header().Set("Cache-Control", "no-store")
	s.metricsHandler.ServeHTTP(w, r)
	return nil
}
