package server

import "strings"

// registerBuiltins registers the commands every client library or Redis
// tool expects to find (see doc.go for the exact behaviour of each).
func (s *Server) registerBuiltins() {
	s.Register("ping", 0, cmdPing)
	s.Register("echo", 1, cmdEcho)
	s.Register("quit", 0, cmdQuit)
	s.Register("select", 1, cmdSelect)
	s.Register("auth", 1, cmdAuth)
	s.Register("hello", 0, cmdHello)
	s.Register("client", 1, cmdClient)
	s.Register("command", 0, cmdCommand)
	s.Register("info", 0, cmdInfo)
	s.Register("config", 1, cmdConfig)
	s.mu.Lock()
	s.addBuiltinInfoSectionsLocked()
	s.mu.Unlock()
	s.registerObservability() // SLOWLOG and more INFO sections (stats.go)
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

// AUTH [username] password: the server has no password, so AUTH fails the
// way it does on a Redis server without requirepass.
func cmdAuth(c *Ctx, args [][]byte) error {
	if len(args) > 2 {
		return c.WrongArity()
	}
	return NewError("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
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
	for i := 1; i < len(args); i++ {
		opt := string(args[i])
		switch {
		case strings.EqualFold(opt, "AUTH") && i+2 < len(args):
			// No passwords: like Redis's nopass default user, "default"
			// with any password is accepted.
			if string(args[i+1]) != "default" {
				return &ReplyError{Code: "WRONGPASS", Msg: "invalid username-password pair or user is disabled."}
			}
			i += 2
		case strings.EqualFold(opt, "SETNAME") && i+1 < len(args):
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
	c.WriteBulkString("mode")
	c.WriteBulkString("standalone")
	c.WriteBulkString("role")
	c.WriteBulkString("master")
	c.WriteBulkString("modules")
	c.WriteArrayHeader(0)
	return nil
}

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
