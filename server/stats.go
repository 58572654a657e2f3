package server

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memrl/memrl/internal/histo"
)

// Per-command statistics.
//
// Every command that reaches its handler is timed from the moment the
// server starts executing it until its handler returns, and the duration
// goes into that command's histogram. That time includes a durability wait
// made inside the handler (a write with nothing pipelined behind it), but
// not a wait the server makes before sending pipelined replies
// (Ctx.AfterDurable), nor reading the request or writing the reply to the
// socket.
//
// The cost on the command path is one monotonic clock read (the other, at
// the start, was made anyway for CLIENT LIST's idle time), two atomic adds into the
// histogram, one for a failure, and an atomic load of the SLOWLOG
// threshold; nothing is locked unless the command is slow enough for the
// SLOWLOG. INFO commandstats and latencystats, the Prometheus metrics and
// SLOWLOG all read what observe records.

// cmdStats are one command's counters, updated lock-free by every
// connection. The calls of a command are its histogram's count.
type cmdStats struct {
	rejected atomic.Uint64   // calls refused before the handler ran (too few arguments)
	failed   atomic.Uint64   // calls that ran and replied with an error
	lat      histo.Histogram // duration of each call that ran
}

// observer is the server's observability state that is not per command.
type observer struct {
	unknown atomic.Uint64 // commands refused as unknown
	slow    slowlog

	// extraConfig are the CONFIG GET parameters added with
	// AddConfigParams; guarded by Server.mu.
	extraConfig []func() [][2]string

	// metrics are the Prometheus collectors added besides the server's
	// own (RegisterMem adds the engine's); guarded by Server.mu.
	metrics []metricsSource
}

// registerObservability installs SLOWLOG and the INFO sections Memory,
// Commandstats and Latencystats, and sets the SLOWLOG defaults.
func (s *Server) registerObservability() {
	s.obs.slow.init()
	s.Register("slowlog", 1, cmdSlowlog, Local)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addInfoSectionLocked("Memory", memoryInfo)
	s.addInfoSectionLocked("Commandstats", s.commandStatsInfo)
	s.addInfoSectionLocked("Latencystats", s.latencyStatsInfo)
	s.extendInfoSectionLocked("Stats", s.moreStatsInfo)
}

// sinceStart returns the time since the server was created, on the
// monotonic clock. The command path reads the clock this way (twice per
// command): it costs one monotonic clock read, where time.Now reads the
// wall clock too.
func (s *Server) sinceStart() time.Duration { return time.Since(s.start) }

// observe records one executed command: its duration since start (a
// sinceStart reading), and whether it failed (replied with an error), and
// returns the command's end (a sinceStart reading). It
// runs on the command path. args are the command's arguments, name
// included, still valid (they alias the connection's read buffer).
func (s *Server) observe(c *conn, cmd *command, args [][]byte, start time.Duration, failed bool) (end time.Duration) {
	end = s.sinceStart()
	d := end - start
	cmd.stats.lat.Record(d)
	if failed {
		cmd.stats.failed.Add(1)
	}
	if t := s.obs.slow.slowerThan.Load(); t >= 0 && d.Microseconds() >= t && cmd.flags&flagSkipSlowlog == 0 {
		s.obs.slow.add(c, args, s.start.Add(start), d)
	}
	return end
}

// commandStatsInfo is INFO commandstats, in Redis's format:
//
//	cmdstat_<name>:calls=N,usec=N,usec_per_call=N.NN,rejected_calls=N,failed_calls=N
//
// for every command called at least once (or rejected).
func (s *Server) commandStatsInfo() [][2]string {
	var out [][2]string
	var snap histo.Snapshot
	for _, cmd := range s.sortedCommands() {
		cmd.stats.lat.Snapshot(&snap)
		rejected, failed := cmd.stats.rejected.Load(), cmd.stats.failed.Load()
		if snap.Count == 0 && rejected == 0 {
			continue
		}
		usec := snap.Sum / 1000
		perCall := 0.0
		if snap.Count > 0 {
			perCall = float64(snap.Sum) / 1000 / float64(snap.Count)
		}
		out = append(out, [2]string{"cmdstat_" + cmd.name,
			"calls=" + strconv.FormatUint(snap.Count, 10) +
				",usec=" + strconv.FormatUint(usec, 10) +
				",usec_per_call=" + strconv.FormatFloat(perCall, 'f', 2, 64) +
				",rejected_calls=" + strconv.FormatUint(rejected, 10) +
				",failed_calls=" + strconv.FormatUint(failed, 10)})
	}
	return out
}

// latencyPercentiles are the percentiles INFO latencystats reports, as
// Redis 7 does by default.
var latencyPercentiles = []struct {
	name string
	q    float64
}{{"p50", 0.50}, {"p99", 0.99}, {"p99.9", 0.999}}

// latencyStatsInfo is INFO latencystats, in Redis 7's format:
//
//	latency_percentiles_usec_<name>:p50=N.NNN,p99=N.NNN,p99.9=N.NNN
//
// Each percentile is the upper bound of its histogram bucket (at most
// 6.25% above the true value; see package internal/histo).
func (s *Server) latencyStatsInfo() [][2]string {
	var out [][2]string
	var snap histo.Snapshot
	for _, cmd := range s.sortedCommands() {
		cmd.stats.lat.Snapshot(&snap)
		if snap.Count == 0 {
			continue
		}
		var b strings.Builder
		for i, p := range latencyPercentiles {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(p.name)
			b.WriteByte('=')
			b.WriteString(formatUsec(snap.Quantile(p.q)))
		}
		out = append(out, [2]string{"latency_percentiles_usec_" + cmd.name, b.String()})
	}
	return out
}

// formatUsec formats d in microseconds with three decimals, as Redis does.
func formatUsec(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e3, 'f', 3, 64)
}

// commandTotals sums the counters of every command.
func (s *Server) commandTotals() (calls, rejected, failed uint64) {
	var snap histo.Snapshot
	for _, cmd := range *s.cmds.Load() {
		cmd.stats.lat.Snapshot(&snap)
		calls += snap.Count
		rejected += cmd.stats.rejected.Load()
		failed += cmd.stats.failed.Load()
	}
	return calls, rejected, failed
}

// moreStatsInfo adds the command totals to INFO stats. Error replies count
// failed, rejected and unknown commands, as Redis's total_error_replies
// does (protocol errors are not counted).
func (s *Server) moreStatsInfo() [][2]string {
	_, rejected, failed := s.commandTotals()
	unknown := s.obs.unknown.Load()
	return [][2]string{
		{"total_error_replies", strconv.FormatUint(failed+rejected+unknown, 10)},
		{"failed_calls", strconv.FormatUint(failed, 10)},
		{"rejected_calls", strconv.FormatUint(rejected+unknown, 10)},
		{"unknown_commands", strconv.FormatUint(unknown, 10)},
		{"slowlog_len", strconv.Itoa(s.obs.slow.len())},
		{"slowlog_log_slower_than", strconv.FormatInt(s.obs.slow.slowerThan.Load(), 10)},
	}
}
