package server

import (
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// infoSection is one "# Name" block of the INFO reply.
type infoSection struct {
	name string // as shown in the header, e.g. "Server"
	// fns return the section's fields, concatenated in order: the first
	// is the section's own, later ones were added by extendInfoSection.
	fns []func() [][2]string
}

// AddInfoSection adds a section to the INFO reply. name is shown as the
// section header ("# Name") and matched case-insensitively by "INFO name";
// fn returns the section's field/value pairs, in order, each rendered as
// "field:value". fn is called on the goroutine of the connection that sent
// INFO, concurrently with everything else, so it must be safe for
// concurrent use. Fields and values must not contain CR or LF, and fields
// must not contain ':' (such bytes are replaced by spaces).
//
// Sections named like Redis's (Server, Clients, Memory, Persistence, Stats,
// Commandstats, Latencystats, Keyspace) appear in Redis's order; others
// follow in the order added. AddInfoSection panics if a section of that
// name exists.
func (s *Server) AddInfoSection(name string, fn func() [][2]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addInfoSectionLocked(name, fn)
}

// addInfoSectionLocked is AddInfoSection.
// REQUIRES: s.mu held.
func (s *Server) addInfoSectionLocked(name string, fn func() [][2]string) {
	for _, sec := range s.info {
		if strings.EqualFold(sec.name, name) {
			panic("server: AddInfoSection: section " + name + " added twice")
		}
	}
	if name == "" || fn == nil {
		panic("server: AddInfoSection: empty name or nil func")
	}
	s.info = append(s.info, infoSection{name: name, fns: []func() [][2]string{fn}})
}

// extendInfoSectionLocked appends fn's fields to the existing section
// name (RegisterMem adds the engine's mapped files to Memory this way).
// It panics if there is no such section.
// REQUIRES: s.mu held.
func (s *Server) extendInfoSectionLocked(name string, fn func() [][2]string) {
	for i := range s.info {
		if strings.EqualFold(s.info[i].name, name) {
			s.info[i].fns = append(s.info[i].fns, fn)
			return
		}
	}
	panic("server: no INFO section " + name + " to extend")
}

// infoOrder ranks the sections Redis has, in Redis's order; other
// sections come after them.
var infoOrder = []string{"server", "clients", "memory", "persistence", "stats",
	"replication", "cpu", "modules", "commandstats", "errorstats", "latencystats",
	"cluster", "keyspace"}

// infoNotDefault are the sections INFO without arguments leaves out, as
// Redis does: they are long (a line per command). "INFO all", "INFO
// everything" or naming them shows them.
var infoNotDefault = []string{"commandstats", "latencystats"}

func infoRank(name string) int {
	for i, n := range infoOrder {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	return len(infoOrder)
}

// infoText renders the requested sections: every one for "all" or
// "everything", the default ones (all but infoNotDefault) when want is
// empty or holds "default", and those named besides.
func (s *Server) infoText(want []string) string {
	s.mu.Lock()
	secs := append([]infoSection(nil), s.info...)
	s.mu.Unlock()
	slices.SortStableFunc(secs, func(a, b infoSection) int { return infoRank(a.name) - infoRank(b.name) })

	all, dflt := false, len(want) == 0
	for _, w := range want {
		switch strings.ToLower(w) {
		case "all", "everything":
			all = true
		case "default":
			dflt = true
		}
	}
	var b strings.Builder
	for _, sec := range secs {
		show := all || containsFold(want, sec.name) || dflt && !containsFold(infoNotDefault, sec.name)
		if !show {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# ")
		b.WriteString(sec.name)
		b.WriteString("\r\n")
		for _, fn := range sec.fns {
			for _, kv := range fn() {
				b.WriteString(infoClean(kv[0], true))
				b.WriteByte(':')
				b.WriteString(infoClean(kv[1], false))
				b.WriteString("\r\n")
			}
		}
	}
	return b.String()
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// infoClean replaces bytes that would break the "field:value\r\n" layout.
func infoClean(s string, field bool) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || field && r == ':' {
			return ' '
		}
		return r
	}, s)
}

// addBuiltinInfoSectionsLocked installs Server, Clients and Stats (the
// other sections are in registerObservability and RegisterMem).
// REQUIRES: s.mu held.
func (s *Server) addBuiltinInfoSectionsLocked() {
	s.addInfoSectionLocked("Server", func() [][2]string {
		port := ""
		if a := s.Addr(); a != nil {
			if _, p, err := net.SplitHostPort(a.String()); err == nil {
				port = p
			}
		}
		up := time.Since(s.start)
		mode := "standalone"
		if s.clusterRouter() != nil {
			mode = "cluster"
		}
		return [][2]string{
			{"memrl_version", Version},
			// Tools that read redis_version to pick features see a
			// RESP2-only server of the 7.0 family's command syntax.
			{"redis_version", "7.0.0"},
			{"redis_mode", mode},
			{"os", runtime.GOOS},
			{"arch_bits", strconv.Itoa(strconv.IntSize)},
			{"go_version", runtime.Version()},
			{"process_id", strconv.Itoa(os.Getpid())},
			{"tcp_port", port},
			{"uptime_in_seconds", strconv.FormatInt(int64(up/time.Second), 10)},
			{"uptime_in_days", strconv.FormatInt(int64(up/(24*time.Hour)), 10)},
		}
	})
	s.addInfoSectionLocked("Clients", func() [][2]string {
		return [][2]string{
			{"connected_clients", strconv.Itoa(s.clientCount())},
			{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
			{"client_buffers_bytes", strconv.FormatInt(s.budget.Used(), 10)},
			{"client_buffers_peak_bytes", strconv.FormatInt(s.budget.Peak(), 10)},
			{"maxmemory", strconv.FormatInt(s.budget.Limit(), 10)},
		}
	})
	s.addInfoSectionLocked("Stats", func() [][2]string {
		return [][2]string{
			{"total_connections_received", strconv.FormatInt(s.statConns.Load(), 10)},
			{"total_commands_processed", strconv.FormatInt(s.statCmds.Load(), 10)},
			{"rejected_connections", strconv.FormatInt(s.statRejected.Load(), 10)},
			{"http_requests_refused", strconv.FormatInt(s.statHTTPProbes.Load(), 10)},
			{"auth_failures", strconv.FormatInt(s.statAuthFailures.Load(), 10)},
			{"timed_out_connections", strconv.FormatInt(s.statTimeouts.Load(), 10)},
			{"output_timeout_disconnects", strconv.FormatInt(s.statOutputTimeouts.Load(), 10)},
			{"requests_refused_maxmemory", strconv.FormatInt(s.budget.Refused(), 10)},
		}
	})
}
