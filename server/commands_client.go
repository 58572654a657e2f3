package server

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// CLIENT ID | GETNAME | SETNAME name | SETINFO LIB-NAME|LIB-VER value |
// INFO | LIST | HELP
func cmdClient(c *Ctx, args [][]byte) error {
	sub := strings.ToLower(string(args[0]))
	rest := args[1:]
	arity := func(n int) error {
		if len(rest) != n {
			return errWrongArity("client|" + sub)
		}
		return nil
	}
	switch sub {
	case "id":
		if err := arity(0); err != nil {
			return err
		}
		c.WriteInt(c.ClientID())
	case "getname":
		if err := arity(0); err != nil {
			return err
		}
		if name := c.ClientName(); name != "" {
			c.WriteBulkString(name)
		} else {
			c.WriteNull()
		}
	case "setname":
		if err := arity(1); err != nil {
			return err
		}
		if len(rest[0]) > maxClientString {
			return errClientStringTooLong
		}
		name := string(rest[0])
		if !validClientString(name) {
			return NewError("Client names cannot contain spaces, newlines or special characters.")
		}
		c.conn.setName(name)
		c.WriteOK()
	case "setinfo":
		if err := arity(2); err != nil {
			return err
		}
		if len(rest[1]) > maxClientString {
			return errClientStringTooLong
		}
		attr, val := strings.ToLower(string(rest[0])), string(rest[1])
		if attr != "lib-name" && attr != "lib-ver" {
			return NewError("Unrecognized option '" + truncate(string(rest[0]), 128) + "'")
		}
		if !validClientString(val) {
			return NewError(attr + " cannot contain spaces, newlines or special characters.")
		}
		c.conn.setLib(attr, val)
		c.WriteOK()
	case "info":
		if err := arity(0); err != nil {
			return err
		}
		c.WriteBulkString(c.conn.describe(time.Now()) + "\n")
	case "list":
		if err := arity(0); err != nil {
			return err
		}
		c.WriteBulkString(c.Server().clientList())
	case "help":
		help := []string{
			"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"ID", "    Return the ID of the current connection.",
			"GETNAME", "    Return the name of the current connection.",
			"SETNAME <name>", "    Assign the name <name> to the current connection.",
			"SETINFO <LIB-NAME|LIB-VER> <value>", "    Record the client library's name or version.",
			"INFO", "    Return information about the current connection.",
			"LIST", "    Return information about all connections.",
		}
		c.WriteArrayHeader(len(help))
		for _, h := range help {
			c.WriteSimple(h)
		}
	default:
		return errUnknownSubcommand(string(args[0]), "client")
	}
	return nil
}

func (c *conn) setName(name string) {
	c.mu.Lock()
	c.name = name
	c.mu.Unlock()
}

// setLib records CLIENT SETINFO; attr is "lib-name" or "lib-ver".
func (c *conn) setLib(attr, val string) {
	c.mu.Lock()
	if attr == "lib-name" {
		c.libName = val
	} else {
		c.libVer = val
	}
	c.mu.Unlock()
}

// describe renders one CLIENT LIST line (without the newline).
func (c *conn) describe(now time.Time) string {
	c.mu.Lock()
	name, libName, libVer, cmd := c.name, c.libName, c.libVer, c.lastCmd
	user := ""
	if c.user != nil {
		user = c.user.Name
	}
	c.mu.Unlock()
	idle := now.Sub(c.srv.start) - time.Duration(c.lastActive.Load())
	return "id=" + strconv.FormatInt(c.id, 10) +
		" addr=" + c.nc.RemoteAddr().String() +
		" laddr=" + c.nc.LocalAddr().String() +
		" name=" + name +
		" age=" + strconv.FormatInt(int64(now.Sub(c.created)/time.Second), 10) +
		" idle=" + strconv.FormatInt(int64(idle/time.Second), 10) +
		" db=0 cmd=" + cmd +
		" lib-name=" + libName +
		" lib-ver=" + libVer +
		" user=" + user
}

// clientList renders CLIENT LIST: one line per connection, by id.
func (s *Server) clientList() string {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	slices.SortFunc(conns, func(a, b *conn) int { return int(a.id - b.id) })
	now := time.Now()
	var b strings.Builder
	for _, c := range conns {
		b.WriteString(c.describe(now))
		b.WriteByte('\n')
	}
	return b.String()
}
