package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memrl/memrl/internal/histo"
)

// Prometheus metrics.
//
// MetricsHandler serves the figures of INFO in Prometheus's text format:
// the same counters, read when scraped (nothing is updated twice on the
// command path). Command and fsync latencies are histograms whose bucket
// bounds are the powers of two of nanoseconds from 2^10 (1.024 µs) to
// 2^36 (68.7 s), where the internal histograms' counts are exact; a
// bucket counts the values strictly below its bound.

// metricsSource adds metrics to a scrape (RegisterMem adds the engine's).
type metricsSource interface {
	Collect(ch chan<- prometheus.Metric)
}

// The lowest and highest power-of-two bucket bounds (in ns) exported.
const (
	metricsMinExp = 10
	metricsMaxExp = histo.MaxExp
)

// histogramMetric turns a snapshot into a Prometheus histogram (seconds).
func histogramMetric(desc *prometheus.Desc, s *histo.Snapshot, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, metricsMaxExp-metricsMinExp+1)
	for e := metricsMinExp; e <= metricsMaxExp; e++ {
		buckets[math.Ldexp(1, e)/1e9] = s.CumulativeAt(e)
	}
	return prometheus.MustNewConstHistogram(desc, s.Count, float64(s.Sum)/1e9, buckets, labels...)
}

var (
	descCmdCalls = prometheus.NewDesc("memrl_commands_total",
		"Commands executed, by command (INFO commandstats calls).", []string{"cmd"}, nil)
	descCmdFailed = prometheus.NewDesc("memrl_commands_failed_total",
		"Commands that replied with an error, by command (failed_calls).", []string{"cmd"}, nil)
	descCmdRejected = prometheus.NewDesc("memrl_commands_rejected_total",
		"Commands refused before running, by command (rejected_calls).", []string{"cmd"}, nil)
	descCmdDuration = prometheus.NewDesc("memrl_command_duration_seconds",
		"Time from the start of a command to the return of its handler.", []string{"cmd"}, nil)
	descUnknown = prometheus.NewDesc("memrl_unknown_commands_total",
		"Commands refused as unknown.", nil, nil)
	descClients = prometheus.NewDesc("memrl_connected_clients",
		"Open client connections.", nil, nil)
	descMaxClients = prometheus.NewDesc("memrl_max_clients",
		"Most client connections allowed.", nil, nil)
	descConnsTotal = prometheus.NewDesc("memrl_connections_received_total",
		"Connections accepted.", nil, nil)
	descConnsRejected = prometheus.NewDesc("memrl_connections_rejected_total",
		"Connections refused because of the client limit.", nil, nil)
	descCmdsRead = prometheus.NewDesc("memrl_commands_processed_total",
		"Commands read, unknown ones included.", nil, nil)
	descSlowlogLen = prometheus.NewDesc("memrl_slowlog_length",
		"Entries in the SLOWLOG.", nil, nil)
	descUptime = prometheus.NewDesc("memrl_uptime_seconds",
		"Seconds since the server was created.", nil, nil)
)

// serverCollector collects the server's metrics and those of the sources
// added with addMetricsSource. It is an unchecked collector (Describe
// sends nothing) because the engine's metrics carry a label per
// collection that comes and goes.
type serverCollector struct{ s *Server }

func (serverCollector) Describe(chan<- *prometheus.Desc) {}

func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	var snap histo.Snapshot
	for _, cmd := range s.sortedCommands() {
		cmd.stats.lat.Snapshot(&snap)
		rejected := cmd.stats.rejected.Load()
		if snap.Count == 0 && rejected == 0 {
			continue // a series per registered command would be mostly zeros
		}
		ch <- prometheus.MustNewConstMetric(descCmdCalls, prometheus.CounterValue, float64(snap.Count), cmd.name)
		ch <- prometheus.MustNewConstMetric(descCmdFailed, prometheus.CounterValue, float64(cmd.stats.failed.Load()), cmd.name)
		ch <- prometheus.MustNewConstMetric(descCmdRejected, prometheus.CounterValue, float64(rejected), cmd.name)
		ch <- histogramMetric(descCmdDuration, &snap, cmd.name)
	}
	ch <- prometheus.MustNewConstMetric(descUnknown, prometheus.CounterValue, float64(s.obs.unknown.Load()))
	ch <- prometheus.MustNewConstMetric(descClients, prometheus.GaugeValue, float64(s.clientCount()))
	ch <- prometheus.MustNewConstMetric(descMaxClients, prometheus.GaugeValue, float64(s.cfg.MaxClients))
	ch <- prometheus.MustNewConstMetric(descConnsTotal, prometheus.CounterValue, float64(s.statConns.Load()))
	ch <- prometheus.MustNewConstMetric(descConnsRejected, prometheus.CounterValue, float64(s.statRejected.Load()))
	ch <- prometheus.MustNewConstMetric(descCmdsRead, prometheus.CounterValue, float64(s.statCmds.Load()))
	ch <- prometheus.MustNewConstMetric(descSlowlogLen, prometheus.GaugeValue, float64(s.obs.slow.len()))
	ch <- prometheus.MustNewConstMetric(descUptime, prometheus.GaugeValue, time.Since(s.start).Seconds())

	s.mu.Lock()
	sources := slices.Clone(s.obs.metrics)
	s.mu.Unlock()
	for _, src := range sources {
		src.Collect(ch)
	}
}

// addMetricsSource adds src to every scrape.
func (s *Server) addMetricsSource(src metricsSource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obs.metrics = append(s.obs.metrics, src)
}

// MetricsHandler returns an HTTP handler serving the server's metrics at
// /metrics in Prometheus's text format: its own (commands, clients), the
// engine's if RegisterMem was called, and the Go runtime's and process's
// (heap, GC, RSS, open files) from client_golang's collectors. With
// withPprof, it also serves Go's net/http/pprof profiles under
// /debug/pprof/ (mounted on this handler's own mux, not on
// http.DefaultServeMux). Anything else is 404.
//
// The handler has no authentication: whoever can reach it can read the
// metrics (collection names included) and, with pprof, profile the
// process. Serve it on loopback only (memrl serve refuses other
// addresses).
func (s *Server) MetricsHandler(withPprof bool) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		serverCollector{s},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}}))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		// Not /debug/pprof/cmdline: the command line may hold
		// --requirepass or --user passwords.
		mux.HandleFunc("/debug/pprof/cmdline", http.NotFound)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return loopbackHostOnly(mux)
}

// loopbackHostOnly refuses (403) a request whose Host header does not name
// this machine (localhost, or a loopback address). The listener is on
// loopback, but a web page can still reach it through DNS rebinding: its
// own host name made to resolve to 127.0.0.1, which the browser then sends
// as Host. Checking Host closes that door.
func loopbackHostOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		if !IsLoopbackHost(host) {
			http.Error(w, "forbidden: the metrics listener answers only requests addressed to localhost or a loopback address", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// slogPrinter passes promhttp's error messages to the server's logger:
// at DEBUG when the scraper hung up before the reply was written (nothing
// is wrong with the server, and a scraper that times out would otherwise
// log an ERROR at every scrape), at ERROR otherwise (metrics that cannot
// be gathered or encoded).
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) {
	msg := "server: metrics: " + strings.TrimSpace(fmt.Sprintln(v...))
	for _, x := range v {
		if err, ok := x.(error); ok && isHangUp(err) {
			p.s.log.Debug(msg + " (the scraper hung up)")
			return
		}
	}
	p.s.log.Error(msg)
}

// isHangUp reports whether err, from writing a reply, means the peer
// closed or reset the connection.
func isHangUp(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.ErrClosedPipe) || errors.Is(err, context.Canceled)
}
