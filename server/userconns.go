package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Connections per user (Config.MaxClientsPerUser, --maxclients-per-user).
//
// MaxClients bounds the connections of everyone together, so without a
// bound per user one user (a read-only account handed to a dashboard, a
// leaked password) could open them all and lock every other user out. On
// a server with users a connection is counted as its user's from a
// successful AUTH (or HELLO ... AUTH) until it closes, authenticates as
// another user, or RESETs; the default user and each other user are
// counted apart. The AUTH that would make a user's count pass the limit
// is answered
//
//	-ERR max number of clients reached for user 'NAME' (maxclients-per-user N)
//
// (Redis's maxclients message, which clients match on, with the user
// named) and its connection is closed, as Redis closes a connection past
// maxclients. The refused connection keeps nothing: it was counted as no
// one, or still as the user it had authenticated as before, until it
// closes. A right password is needed to be refused, so the refusal tells
// nothing to a client without one.
//
// Not counted: connections that have not authenticated yet (they are
// closed after --auth-timeout, and hold only PreAuthLimits), and every
// connection of a server without users, where all are the default user
// and MaxClients alone bounds them.

// userConns counts each user's connections for MaxClientsPerUser.
type userConns struct {
	limit int // immutable after New; <= 0: no bound, nothing counted

	mu sync.Mutex       // guards n and of
	n  map[string]int   // connections counted as each user now
	of map[*conn]string // the user each counted connection is counted as

	refused atomic.Int64 // AUTHs refused by the limit, ever
}

// perUserLimit is MaxClientsPerUser with its default applied: 0 means
// three quarters of maxClients (rounded up: the others keep at least a
// quarter, and a tiny maxClients is not cut further), < 0 no bound, and no
// bound either where no one authenticates (required is false).
func perUserLimit(cfg, maxClients int, required bool) int {
	switch {
	case !required || cfg < 0:
		return 0
	case cfg == 0:
		return maxClients - maxClients/4
	}
	return cfg
}

// errMaxClientsUser is the refusal described above.
func errMaxClientsUser(name string, limit int) *ReplyError {
	return NewError("max number of clients reached for user '" + name +
		"' (maxclients-per-user " + strconv.Itoa(limit) + ")")
}

// join counts c as user name's, in place of the user it was counted as,
// or returns the refusal if name already has limit connections (c then
// stays counted as before).
func (t *userConns) join(c *conn, name string) error {
	if t.limit <= 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old, counted := t.of[c]
	if counted && old == name {
		return nil
	}
	if t.n[name] >= t.limit {
		t.refused.Add(1)
		return errMaxClientsUser(name, t.limit)
	}
	if t.n == nil {
		t.n, t.of = make(map[string]int), make(map[*conn]string)
	}
	if counted {
		t.dropLocked(old)
	}
	t.n[name]++
	t.of[c] = name
	return nil
}

// leave stops counting c (closed, or no longer authenticated).
func (t *userConns) leave(c *conn) {
	if t.limit <= 0 {
		return
	}
	t.mu.Lock()
	if name, ok := t.of[c]; ok {
		delete(t.of, c)
		t.dropLocked(name)
	}
	t.mu.Unlock()
}

// dropLocked takes one connection off name's count.
// REQUIRES: t.mu held; name counted at least once.
func (t *userConns) dropLocked(name string) {
	if t.n[name]--; t.n[name] <= 0 {
		delete(t.n, name)
	}
}

// fairInfo returns the INFO stats fields of the search admission
// (admission.go) and of the per-user connection bound.
func (s *Server) fairInfo() [][2]string {
	running, queued, users := s.gate.state()
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	return [][2]string{
		{"rejected_connections_per_user", itoa(s.perUser.refused.Load())},
		{"search_slots", strconv.Itoa(s.gate.slots)},
		{"search_running", strconv.Itoa(running)},
		{"search_queued", strconv.Itoa(queued)},
		{"search_queued_users", strconv.Itoa(users)},
		{"search_admissions_waited", itoa(s.gate.waited.Load())},
		{"search_admission_wait_usec", itoa(s.gate.waitNanos.Load() / int64(time.Microsecond))},
		{"search_admission_wait_cancelled", itoa(s.gate.cancelled.Load())},
	}
}

// clientsPerUserInfo returns the INFO clients field of the bound.
func (s *Server) clientsPerUserInfo() [][2]string {
	return [][2]string{{"maxclients_per_user", strconv.Itoa(s.perUser.limit)}}
}
