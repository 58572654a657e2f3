package server

import (
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// COMMAND | COMMAND COUNT | COMMAND LIST | COMMAND INFO [name ...] |
// COMMAND DOCS [name ...] | COMMAND HELP
//
// Entries use the Redis 7 layout of ten fields (name, arity, flags, first
// key, last key, key step, ACL categories, tips, key specs, subcommands),
// which go-redis and redis-cli parse. Arity is -(minArgs+1): "at least
// minArgs arguments after the name", since handlers check any maximum
// themselves. Flags are "readonly" or "write" (from ReadOnly). Key
// positions are keySpecOf's (route.go): every MEM.* command but MEM.LIST
// and MEM.CHECKPOINT has its collection name as its one key, at 1, so
// that cluster clients hash the collection name.
func cmdCommand(c *Ctx, args [][]byte) error {
	cmds := c.Server().sortedCommands()
	if len(args) == 0 {
		c.WriteArrayHeader(len(cmds))
		for _, cmd := range cmds {
			writeCommandEntry(c.Writer, cmd)
		}
		return nil
	}
	sub := strings.ToLower(string(args[0]))
	switch sub {
	case "count":
		if len(args) != 1 {
			return errWrongArity("command|count")
		}
		c.WriteInt(int64(len(cmds)))
	case "list":
		// Filters (FILTERBY ...) are not supported; all names are listed.
		if len(args) != 1 {
			return NewError("COMMAND LIST filters are not supported")
		}
		c.WriteArrayHeader(len(cmds))
		for _, cmd := range cmds {
			c.WriteBulkString(cmd.name)
		}
	case "info":
		names := args[1:]
		if len(names) == 0 {
			c.WriteArrayHeader(len(cmds))
			for _, cmd := range cmds {
				writeCommandEntry(c.Writer, cmd)
			}
			return nil
		}
		c.WriteArrayHeader(len(names))
		for _, n := range names {
			if cmd := c.Server().lookup(n); cmd != nil {
				writeCommandEntry(c.Writer, cmd)
			} else {
				c.WriteNullArray()
			}
		}
	case "docs":
		// Documentation is not served. An empty map (a flat RESP2 array)
		// is what Redis returns for unknown names, and redis-cli then uses
		// its built-in help.
		c.WriteArrayHeader(0)
	case "help":
		help := []string{
			"COMMAND [<subcommand> [<arg> [value] [opt] ...]]. Subcommands are:",
			"(no subcommand)", "    Return details about all commands.",
			"COUNT", "    Return the total number of commands.",
			"LIST", "    Return a list of all command names.",
			"INFO [<command-name> ...]", "    Return details about the named commands.",
			"DOCS [<command-name> ...]", "    Return documentation (none is served).",
		}
		c.WriteArrayHeader(len(help))
		for _, h := range help {
			c.WriteSimple(h)
		}
	default:
		return errUnknownSubcommand(string(args[0]), "command")
	}
	return nil
}

// writeCommandEntry writes one COMMAND INFO entry.
func writeCommandEntry(w *Writer, cmd *command) {
	w.WriteArrayHeader(10)
	w.WriteBulkString(cmd.name)
	w.WriteInt(-int64(cmd.minArgs + 1))
	w.WriteArrayHeader(1) // flags
	if cmd.flags&ReadOnly != 0 {
		w.WriteSimple("readonly")
	} else {
		w.WriteSimple("write")
	}
	ks := keySpecOf(cmd.name)
	w.WriteInt(int64(ks.first))
	w.WriteInt(int64(ks.last))
	w.WriteInt(int64(ks.step))
	w.WriteArrayHeader(0) // ACL categories
	w.WriteArrayHeader(0) // tips
	w.WriteArrayHeader(0) // key specs
	w.WriteArrayHeader(0) // subcommands
}

// sortedCommands returns the registered commands ordered by name.
func (s *Server) sortedCommands() []*command {
	m := *s.cmds.Load()
	out := make([]*command, 0, len(m))
	for _, cmd := range m {
		out = append(out, cmd)
	}
	slices.SortFunc(out, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return out
}

// CONFIG GET pattern [pattern ...] | CONFIG SET ... | CONFIG RESETSTAT |
// CONFIG HELP
//
// The server has no runtime configuration; CONFIG GET reports read-only
// parameters with their true values, named as in Redis (redis-benchmark
// asks for "save" and "appendonly" when it starts). See configParams.
func cmdConfig(c *Ctx, args [][]byte) error {
	sub := strings.ToLower(string(args[0]))
	switch sub {
	case "get":
		if len(args) < 2 {
			return errWrongArity("config|get")
		}
		params := c.Server().configParams()
		var out []string
		for _, p := range params {
			for _, pat := range args[1:] {
				if ok, _ := path.Match(strings.ToLower(string(pat)), p[0]); ok {
					out = append(out, p[0], p[1])
					break
				}
			}
		}
		c.WriteArrayHeader(len(out))
		for _, s := range out {
			c.WriteBulkString(s)
		}
	case "set":
		return NewError("CONFIG SET is not supported: the configuration is fixed at startup")
	case "resetstat":
		return NewError("CONFIG RESETSTAT is not supported")
	case "help":
		help := []string{
			"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		}
		c.WriteArrayHeader(len(help))
		for _, h := range help {
			c.WriteSimple(h)
		}
	default:
		return errUnknownSubcommand(string(args[0]), "config")
	}
	return nil
}

// configParams lists the parameters CONFIG GET can report: the server's
// own, then those added with AddConfigParams (which replace a server
// parameter of the same name).
func (s *Server) configParams() [][2]string {
	host, port := s.cfg.Addr, ""
	if a := s.Addr(); a != nil {
		host = a.String()
	}
	if h, p, err := net.SplitHostPort(host); err == nil {
		host, port = h, p
	}
	params := [][2]string{
		{"appendonly", "no"}, // until AddConfigParams says otherwise (RegisterMem does)
		{"bind", host},
		{"databases", "1"},
		{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
		{"port", port},
		{"proto-max-bulk-len", strconv.Itoa(s.cfg.Limits.MaxBulkLen)},
		{"save", ""}, // no RDB snapshots
		{"slowlog-log-slower-than", strconv.FormatInt(s.obs.slow.slowerThan.Load(), 10)},
		{"slowlog-max-len", strconv.Itoa(s.obs.slow.capacity())},
		{"timeout", strconv.FormatInt(int64(s.cfg.IdleTimeout/time.Second), 10)}, // seconds, as Redis
		{"maxmemory", strconv.FormatInt(s.budget.Limit(), 10)},                   // of client buffers (budget.go)
		{"client-query-buffer-limit", strconv.Itoa(s.cfg.Limits.MaxCommandLen)},
		{"max-queued-commands", strconv.Itoa(s.cfg.MaxQueuedCommands)}, // per MULTI (tx.go); 0: no cap
		{"protected-mode", yesNo(!s.cfg.DisableProtectedMode)},
		{"tls-port", tlsPort(s.cfg.TLS != nil, port)},
		{"busy-timeout", strconv.FormatInt(s.cfg.BusyTimeout.Milliseconds(), 10)},
		// Redis answers CONFIG GET requirepass with the password itself;
		// memrl never shows it, only whether one is set.
		{"requirepass", redactedIf(s.auth.required())},
	}
	s.mu.Lock()
	extra := slices.Clone(s.obs.extraConfig)
	s.mu.Unlock()
	for _, fn := range extra {
		for _, kv := range fn() {
			kv[0] = strings.ToLower(kv[0])
			if i := slices.IndexFunc(params, func(p [2]string) bool { return p[0] == kv[0] }); i >= 0 {
				params[i] = kv
			} else {
				params = append(params, kv)
			}
		}
	}
	return params
}

// AddConfigParams adds parameters for CONFIG GET to report: fn returns
// name/value pairs (names are lower-cased) and is called, concurrently
// with everything else, on each CONFIG GET; it must be safe for concurrent
// use. A pair named like one of the server's own parameters (appendonly,
// bind, ...) replaces it. RegisterMem adds the engine's (appendonly,
// appendfsync, dir, ...) this way, so the server core needs no engine.
func (s *Server) AddConfigParams(fn func() [][2]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obs.extraConfig = append(s.obs.extraConfig, fn)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// tlsPort is Redis's tls-port: the port when the server speaks TLS, else 0.
func tlsPort(tls bool, port string) string {
	if tls {
		return port
	}
	return "0"
}

func redactedIf(set bool) string {
	if set {
		return "(redacted)"
	}
	return ""
}
