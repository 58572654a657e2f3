package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SLOWLOG defaults, as in Redis.
const (
	// DefaultSlowlogSlowerThan is the SLOWLOG threshold in microseconds.
	DefaultSlowlogSlowerThan = 10000
	// DefaultSlowlogMaxLen is how many entries the SLOWLOG keeps.
	DefaultSlowlogMaxLen = 128
)

// Limits on what one SLOWLOG entry keeps of a command, as in Redis
// (SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING): a vector blob or
// a payload is not kept whole.
const (
	slowlogMaxArgc   = 32
	slowlogMaxString = 128
)

// slowlog keeps the most recent commands that took at least slowerThan
// microseconds.
type slowlog struct {
	// slowerThan is the threshold in microseconds; negative disables the
	// log and 0 logs every command. Read lock-free on the command path.
	slowerThan atomic.Int64

	mu     sync.Mutex  // guards the fields below
	maxLen int         // most entries kept; 0 keeps none
	nextID int64       // id of the next entry: ids grow from 0, never reused
	ring   []slowEntry // entries, oldest at ring[head]; len(ring) <= maxLen
	head   int         // index of the oldest entry once ring is full
}

// slowEntry is one SLOWLOG entry.
type slowEntry struct {
	id       int64
	unix     int64 // when the command started, unix seconds
	usec     int64 // how long it took, microseconds
	args     []string
	addr     string
	clientNm string
}

func (l *slowlog) init() {
	l.slowerThan.Store(DefaultSlowlogSlowerThan)
	l.maxLen = DefaultSlowlogMaxLen
}

// SetSlowlog sets the SLOWLOG threshold in microseconds (commands taking
// at least that long are logged; negative disables the log, 0 logs every
// command) and how many entries it keeps (maxLen < 0 is treated as 0).
// Shrinking maxLen drops the oldest entries. It may be called while the
// server runs.
func (s *Server) SetSlowlog(slowerThanUsec int64, maxLen int) {
	l := &s.obs.slow
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slowerThan.Store(slowerThanUsec)
	maxLen = max(maxLen, 0)
	if maxLen != l.maxLen {
		kept := l.newestLocked(maxLen)
		l.ring, l.head, l.maxLen = kept, 0, maxLen
	}
}

// add records a command that took d. args include the command name.
func (l *slowlog) add(c *conn, args [][]byte, start time.Time, d time.Duration) {
	e := slowEntry{
		unix:     start.Unix(),
		usec:     d.Microseconds(),
		args:     slowlogArgs(args),
		addr:     c.nc.RemoteAddr().String(),
		clientNm: c.clientName(),
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxLen == 0 {
		return
	}
	e.id = l.nextID
	l.nextID++
	if len(l.ring) < l.maxLen {
		l.ring = append(l.ring, e)
		return
	}
	l.ring[l.head] = e
	l.head = (l.head + 1) % len(l.ring)
}

// newestLocked returns up to n entries, oldest first.
// REQUIRES: l.mu held.
func (l *slowlog) newestLocked(n int) []slowEntry {
	all := make([]slowEntry, 0, len(l.ring))
	all = append(all, l.ring[l.head:]...)
	all = append(all, l.ring[:l.head]...)
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

func (l *slowlog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ring)
}

func (l *slowlog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring, l.head = nil, 0
}

// slowlogArgs copies what an entry keeps of a command's arguments, as Redis
// does: at most 32 (the last replaced by "... (N more arguments)"), each at
// most 128 bytes (then followed by "... (N more bytes)"), and passwords
// (AUTH, HELLO ... AUTH) replaced by "(redacted)".
func slowlogArgs(args [][]byte) []string {
	n := min(len(args), slowlogMaxArgc)
	out := make([]string, n)
	for i := range n {
		if i == slowlogMaxArgc-1 && len(args) > slowlogMaxArgc {
			out[i] = "... (" + strconv.Itoa(len(args)-slowlogMaxArgc+1) + " more arguments)"
			break
		}
		a := args[i]
		if len(a) > slowlogMaxString {
			out[i] = string(a[:slowlogMaxString]) + "... (" + strconv.Itoa(len(a)-slowlogMaxString) + " more bytes)"
		} else {
			out[i] = string(a)
		}
	}
	redactSecrets(out)
	return out
}

// redactSecrets replaces the credentials of AUTH and HELLO in args (name
// first) by "(redacted)", so that the SLOWLOG never shows a password.
func redactSecrets(args []string) {
	switch strings.ToLower(args[0]) {
	case "auth":
		for i := 1; i < len(args); i++ {
			args[i] = "(redacted)"
		}
	case "hello":
		// Everything after the first AUTH: a SETNAME value may itself be
		// "AUTH", so following HELLO's layout word by word here could
		// redact the wrong two words and keep the password.
		for i := 1; i < len(args); i++ {
			if strings.EqualFold(args[i], "AUTH") {
				for j := i + 1; j < len(args); j++ {
					args[j] = "(redacted)"
				}
				break
			}
		}
	}
}

// SLOWLOG GET [count] | SLOWLOG LEN | SLOWLOG RESET | SLOWLOG HELP
//
// GET returns the newest count entries (default 10, -1 for all), newest
// first, each [id, unix time, microseconds, [args...], client address,
// client name], as Redis does.
func cmdSlowlog(c *Ctx, args [][]byte) error {
	l := &c.Server().obs.slow
	switch sub := strings.ToLower(string(args[0])); sub {
	case "get":
		if len(args) > 2 {
			return errWrongArity("slowlog|get")
		}
		count := int64(10)
		if len(args) == 2 {
			n, ok := parseInt(args[1])
			if !ok || n < -1 {
				return NewError("count should be greater than or equal to -1")
			}
			count = n
		}
		l.mu.Lock()
		if count == -1 || count > int64(len(l.ring)) {
			count = int64(len(l.ring))
		}
		entries := l.newestLocked(int(count))
		l.mu.Unlock()
		c.WriteArrayHeader(len(entries))
		for i := len(entries) - 1; i >= 0; i-- {
			e := &entries[i]
			c.WriteArrayHeader(6)
			c.WriteInt(e.id)
			c.WriteInt(e.unix)
			c.WriteInt(e.usec)
			c.WriteArrayHeader(len(e.args))
			for _, a := range e.args {
				c.WriteBulkString(a)
			}
			c.WriteBulkString(e.addr)
			c.WriteBulkString(e.clientNm)
		}
	case "len":
		if len(args) != 1 {
			return errWrongArity("slowlog|len")
		}
		c.WriteInt(int64(l.len()))
	case "reset":
		if len(args) != 1 {
			return errWrongArity("slowlog|reset")
		}
		l.reset()
		c.WriteOK()
	case "help":
		help := []string{
			"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN", "    Return the length of the slowlog.",
			"RESET", "    Reset the slowlog.",
		}
		c.WriteArrayHeader(len(help))
		for _, h := range help {
			c.WriteSimple(h)
		}
	default:
		return errUnknownSubcommand(string(args[0]), "slowlog")
	}
	return nil
}

// capacity returns how many entries the log keeps.
func (l *slowlog) capacity() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxLen
}
