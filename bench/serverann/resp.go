package serverann

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// conn is a minimal RESP2 client: it writes commands as arrays of bulk
// strings and reads replies, nothing else. The benchmark's client shares
// the machine's cores with the server, so it avoids a general client's
// per-command allocations and reflection; the commands it sends are few.
//
// A conn is used by one goroutine at a time.
type conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

// respError is an error reply (-ERR …) from the server.
type respError string

func (e respError) Error() string { return string(e) }

func dial(addr string) (*conn, error) {
	nc, err := netDial(addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10)}, nil
}

func (c *conn) close() error { return c.nc.Close() }

// send buffers one command; flush sends what is buffered.
func (c *conn) send(args ...[]byte) {
	c.w.WriteByte('*')
	c.w.WriteString(strconv.Itoa(len(args)))
	c.w.WriteString("\r\n")
	for _, a := range args {
		c.w.WriteByte('$')
		c.w.WriteString(strconv.Itoa(len(a)))
		c.w.WriteString("\r\n")
		c.w.Write(a)
		c.w.WriteString("\r\n")
	}
}

func (c *conn) flush() error { return c.w.Flush() }

// do sends one command and reads its reply; an error reply is returned as
// a respError.
func (c *conn) do(args ...string) (any, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	c.send(b...)
	if err := c.flush(); err != nil {
		return nil, err
	}
	return c.read()
}

// read reads one reply: a string (simple string), int64, []byte (bulk; nil
// for a null bulk), []any (array) or a respError as the error.
func (c *conn) read() (any, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("resp: malformed line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return string(body), nil
	case '-':
		return nil, respError(body)
	case ':':
		return strconv.ParseInt(string(body), 10, 64)
	case '$':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return []byte(nil), nil
		}
		b := make([]byte, n+2)
		if _, err := readFull(c.r, b); err != nil {
			return nil, err
		}
		return b[:n], nil
	case '*':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return []any(nil), nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("resp: unknown reply type %q", line[0])
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// retrievedIDs takes the ids out of a MEM.RETRIEVE reply: an array of
// [id, sim, q, score] arrays, best first.
func retrievedIDs(reply any, dst []int64) ([]int64, error) {
	rows, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("MEM.RETRIEVE replied %T, want an array", reply)
	}
	for _, r := range rows {
		f, ok := r.([]any)
		if !ok || len(f) < 1 {
			return nil, fmt.Errorf("MEM.RETRIEVE row %v, want [id, sim, q, score]", r)
		}
		id, ok := f[0].(int64)
		if !ok {
			return nil, fmt.Errorf("MEM.RETRIEVE id %v, want an integer", f[0])
		}
		dst = append(dst, id)
	}
	return dst, nil
}

// infoField returns field's value from an INFO or MEM.INFO reply: the
// former a bulk of field:value lines, the latter a flat field/value array.
func infoField(reply any, field string) (string, error) {
	switch r := reply.(type) {
	case []byte:
		for _, line := range splitLines(string(r)) {
			if len(line) > len(field) && line[:len(field)] == field && line[len(field)] == ':' {
				return line[len(field)+1:], nil
			}
		}
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if k, ok := r[i].([]byte); ok && string(k) == field {
				switch v := r[i+1].(type) {
				case []byte:
					return string(v), nil
				case int64:
					return strconv.FormatInt(v, 10), nil
				}
			}
		}
	}
	return "", errors.New("no field " + field + " in the reply")
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		line := s[:i]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		out = append(out, line)
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}
