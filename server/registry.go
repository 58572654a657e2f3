package server

import "strings"

// HandlerFunc executes one command. args are the arguments after the
// command name (args[0] is the first argument); they alias the connection's
// read buffer and are valid only until the handler returns (copy anything
// kept, e.g. with bytes.Clone).
//
// The handler replies through c (c.WriteInt, c.WriteBulk, ...) and returns
// nil, or returns an error without having written anything, in which case
// the server sends it as the reply (see Writer.WriteErr). A handler must send
// exactly one reply (an array counts as one). The server enforces part of
// this: a handler that returns nil without writing gets an error reply, and
// one that writes and then returns an error has its connection closed,
// because the client's view of the reply stream can no longer be trusted.
//
// A handler may block (for example until its write is durable); it blocks
// only its own connection, except that an EXEC that writes waits for the
// commands running on its collections when it arrives to finish, and
// commands on them arriving meanwhile wait behind it (tx.go). A long
// handler should honour c.Context(), which ends at busy-timeout and when
// the client disconnects (busy.go). Waits for the socket and for durability
// (Ctx.AfterDurable) do not count: the server lets go of the transaction
// lock for them, so a handler must not hold an engine lock across a reply
// write or AfterDurable. A handler that panics is recovered: the client
// gets an error and its connection is closed; the server keeps running.
type HandlerFunc func(c *Ctx, args [][]byte) error

// CommandFlag describes what a command may do, for access control.
type CommandFlag uint8

const (
	// ReadOnly marks a command that changes no stored data. Users
	// configured read-only (User.ReadOnly) may run only these; a command
	// registered without it is treated as a write.
	ReadOnly CommandFlag = 1 << iota
	// NoAuth marks a command a client may send before it has
	// authenticated when the server requires a password (AUTH, HELLO,
	// PING, QUIT). Every other command then gets "-NOAUTH".
	NoAuth
)

// command is one registered command.
type command struct {
	name    string // lower case, as shown in errors and COMMAND replies
	minArgs int    // fewest arguments after the name
	flags   CommandFlag
	fn      HandlerFunc
	stats   cmdStats // calls, failures and latency (stats.go)
}

// Register adds a command. name is matched case-insensitively; minArgs is
// the fewest arguments the command takes after its name (a call with fewer
// gets "ERR wrong number of arguments for 'name' command" without reaching
// fn; a handler that also has a maximum checks it itself and returns
// c.WrongArity()).
//
// flags say what the command may do (see CommandFlag); none means a command
// that writes and needs an authenticated client, the safe default.
//
// Register may be called before or while the server runs. It panics if the
// name is empty, contains a blank, or is already registered (including the
// built-in commands), as registering a command twice is a programming error.
func (s *Server) Register(name string, minArgs int, fn HandlerFunc, flags ...CommandFlag) {
	lname := strings.ToLower(name)
	if lname == "" || strings.ContainsAny(lname, " \t\r\n") || fn == nil || minArgs < 0 {
		panic("server: Register: invalid command " + name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.cmds.Load()
	if _, dup := old[lname]; dup {
		panic("server: Register: command " + lname + " registered twice")
	}
	// Copy on write: the hot path looks commands up without a lock.
	next := make(map[string]*command, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	cmd := &command{name: lname, minArgs: minArgs, fn: fn}
	for _, f := range flags {
		cmd.flags |= f
	}
	next[lname] = cmd
	s.cmds.Store(&next)
}

// lookup finds the command named by the raw name argument,
// case-insensitively, without allocating for names up to 64 bytes.
func (s *Server) lookup(raw []byte) *command {
	cmds := *s.cmds.Load()
	var buf [64]byte
	if len(raw) > len(buf) {
		return cmds[strings.ToLower(string(raw))]
	}
	for i, c := range raw {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return cmds[string(buf[:len(raw)])]
}
