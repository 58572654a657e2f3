package server

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// infoSection is one "# Name" block of the INFO reply.
type infoSection struct {
	name string // as shown in the header, e.g. "Server"
	fn   func() [][2]string
}

// AddInfoSection adds a section to the INFO reply. name is shown as the
// section header ("# Name") and matched case-insensitively by "INFO name";
// fn returns the section's field/value pairs, in order, each rendered as
// "field:value". fn is called on the goroutine of the connection that sent
// INFO, concurrently with everything else, so it must be safe for
// concurrent use. Fields and values must not contain CR or LF, and fields
// must not contain ':' (such bytes are replaced by spaces).
//
// Sections appear after the built-in ones (Server, Clients, Stats) in the
// order added. AddInfoSection panics if a section of that name exists.
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
	s.info = append(s.info, infoSection{name: name, fn: fn})
}

// infoText renders the requested sections (all when want is empty or holds
// "all", "everything" or "default").
func (s *Server) infoText(want []string) string {
	s.mu.Lock()
	secs := append([]infoSection(nil), s.info...)
	s.mu.Unlock()

	all := len(want) == 0
	for _, w := range want {
		switch strings.ToLower(w) {
		case "all", "everything", "default":
			all = true
		}
	}
	var b strings.Builder
	for _, sec := range secs {
		if !all && !containsFold(want, sec.name) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# ")
		b.WriteString(sec.name)
		b.WriteString("\r\n")
		for _, kv := range sec.fn() {
			b.WriteString(infoClean(kv[0], true))
			b.WriteByte(':')
			b.WriteString(infoClean(kv[1], false))
			b.WriteString("\r\n")
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

// addBuiltinInfoSectionsLocked installs Server, Clients and Stats.
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
		return [][2]string{
			{"memrl_version", Version},
			// Tools that read redis_version to pick features see a
			// RESP2-only server of the 7.0 family's command syntax.
			{"redis_version", "7.0.0"},
			{"redis_mode", "standalone"},
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
