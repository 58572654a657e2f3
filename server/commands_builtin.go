package server

import "strings"

// registerBuiltins registers the commands every client library or Redis
// tool expects to find (see doc.go for the exact behaviour of each).
func (s *Server) registerBuiltins() {
	s.Register("ping", 0, cmdPing, ReadOnly, NoAuth)
	s.Register("echo", 1, cmdEcho, ReadOnly)
	s.Register("quit", 0, cmdQuit, ReadOnly, NoAuth, flagNotQueued) // ends a transaction too
	s.Register("select", 1, cmdSelect, ReadOnly)
	s.Register("auth", 1, cmdAuth, ReadOnly, NoAuth)
	s.Register("hello", 0, cmdHello, ReadOnly, NoAuth)
	s.Register("client", 1, cmdClient, ReadOnly) // changes only the connection
	s.Register("command", 0, cmdCommand, ReadOnly)
	s.Register("info", 0, cmdInfo, ReadOnly)
	s.Register("config", 1, cmdConfig, ReadOnly) // CONFIG SET is refused
	s.mu.Lock()
	s.addBuiltinInfoSectionsLocked()
	s.extendInfoSectionLocked("Clients", s.clientsPerUserInfo) // userconns.go
	s.extendInfoSectionLocked("Stats", s.fairInfo)
	s.mu.Unlock()
	s.registerObservability() // SLOWLOG and more INFO sections (stats.go)
	s.registerTx()            // MULTI, EXEC, DISCARD, WATCH, UNWATCH, RESET (tx.go)
	s.registerCluster()       // READONLY, READWRITE, ASKING, ROLE, CLUSTER (commands_cluster.go)
}

// PING [message]
func cmdPing(c *Ctx, args [][]byte) error {
	switch len(args) {
	case 0:
		c.WriteSimple("PONG")
	case 1:
		c.WriteBulk(args[0])
	default:
		return c.WrongArity()
	}
	return nil
}

// ECHO message
func cmdEcho(c *Ctx, args [][]byte) error {
	if len(args) != 1 {
		return c.WrongArity()
	}
	c.WriteBulk(args[0])
	return nil
}

// QUIT: reply +OK, then close the connection.
func cmdQuit(c *Ctx, args [][]byte) error {
	c.WriteOK()
	c.CloseAfterReply()
	return nil
}

// SELECT index: there is one database, 0.
func cmdSelect(c *Ctx, args [][]byte) error {
	if len(args) != 1 {
		return c.WrongArity()
	}
	n, ok := parseInt(args[0])
	if !ok {
		return errNotInteger
	}
	if n != 0 {
		return NewError("DB index is out of range")
	}
	c.WriteOK()
	return nil
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
//
// Only RESP2 is spoken: protover 3 gets "-NOPROTO", on which clients
// (go-redis, redis-py, ...) fall back to RESP2. Nothing is changed unless
// the whole command succeeds.
func cmdHello(c *Ctx, args [][]byte) error {
	if len(args) > 0 {
		ver, ok := parseInt(args[0])
		if !ok {
			return NewError("Protocol version is not an integer or out of range")
		}
		if ver != 2 {
			return &ReplyError{Code: "NOPROTO", Msg: "unsupported protocol version"}
		}
	}
	var setName *string
	var authUser, authPass []byte
	for i := 1; i < len(args); i++ {
		opt := string(args[i])
		switch {
		case strings.EqualFold(opt, "AUTH") && i+2 < len(args):
			authUser, authPass = args[i+1], args[i+2]
			i += 2
		case strings.EqualFold(opt, "SETNAME") && i+1 < len(args):
			if len(args[i+1]) > maxClientString {
				return errClientStringTooLong
			}
			name := string(args[i+1])
			if !validClientString(name) {
				return NewError("Client names cannot contain spaces, newlines or special characters.")
			}
			setName = &name
			i++
		default:
			return NewError("Syntax error in HELLO option '" + truncate(opt, 128) + "'")
		}
	}
	// As in Redis, an unauthenticated client may send HELLO only to
	// authenticate with it.
	if authUser != nil {
		if err := c.conn.authenticate(authUser, authPass); err != nil {
			return err
		}
	} else if c.conn.user == nil {
		return &ReplyError{Code: "NOAUTH", Msg: "HELLO must be called with the client already authenticated, " +
			"otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"}
	}
	if setName != nil {
		c.conn.setName(*setName)
	}
	c.WriteArrayHeader(14)
	c.WriteBulkString("server")
	c.WriteBulkString("memrl")
	c.WriteBulkString("version")
	c.WriteBulkString(Version)
	c.WriteBulkString("proto")
	c.WriteInt(2)
	c.WriteBulkString("id")
	c.WriteInt(c.ClientID())
	mode, role := "standalone", "master"
	if cr := c.Server().clusterRouter(); cr != nil {
		mode = "cluster"
		if !cr.State().IsLeader() {
			role = "replica"
		}
	}
	c.WriteBulkString("mode")
	c.WriteBulkString(mode)
	c.WriteBulkString("role")
	c.WriteBulkString(role)
	c.WriteBulkString("modules")
	c.WriteArrayHeader(0)
	return nil
}

// maxClientString bounds a client name and library name or version: the
// connection keeps them for its lifetime, so, unbounded, each client could
// pin up to MaxBulkLen bytes per field outside every budget.
const maxClientString = 256

var errClientStringTooLong = NewError("client names and library names and versions are at most 256 bytes")

// validClientString reports whether s may be a client name or library
// name/version: printable ASCII without spaces, as Redis requires.
func validClientString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '!' || s[i] > '~' {
			return false
		}
	}
	return true
}

// INFO [section ...]
func cmdInfo(c *Ctx, args [][]byte) error {
	want := make([]string, len(args))
	for i, a := range args {
		want[i] = string(a)
	}
	c.WriteBulkString(c.Server().infoText(want))
	return nil
}
