package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// A minimal RESP2 client, enough for a node to ask another ROLE, for
// MEM.LIST CLUSTER to ask each shard's leader, and for memrl cluster start
// to probe the shards: one connection, one command, one reply.

// RedisError is an error reply ("-MOVED 12 127.0.0.1:7001" is
// RedisError("MOVED 12 127.0.0.1:7001")).
type RedisError string

func (e RedisError) Error() string { return string(e) }

// maxReplyLen bounds what Do reads of one reply: its bytes in all (an
// array's elements included), and so any one element or count, so that a
// confused or hostile peer cannot make a node allocate without bound.
const maxReplyLen = 64 << 20

// budgetReader reads at most left bytes from r, then fails with
// errBadReply: the bound on a whole reply (maxReplyLen). A per-element
// bound alone would let a peer stream an array of 64M elements of 64 MiB
// each, all of it buffered until the timeout.
type budgetReader struct {
	r    io.Reader
	left int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%w: longer than %d bytes", errBadReply, maxReplyLen)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// Do connects to addr, sends one command, and returns its reply: a string
// (simple or bulk), int64, nil (a null), []any (an array) or a
// RedisError (an error reply, also returned as the error). The whole
// exchange is bounded by timeout and ctx. It sends no AUTH: Auth.Do does.
func Do(ctx context.Context, addr string, timeout time.Duration, args ...string) (any, error) {
	return Auth{}.Do(ctx, addr, timeout, args...)
}

// Auth is what a node (or memrl cluster) sends to another node's client
// port before its command, as Redis's masterauth and masteruser: AUTH
// [User] Password. The zero Auth sends no AUTH.
type Auth struct {
	// User is the user's name; empty means the default user (AUTH with
	// the password alone).
	User string
	// Password is the user's password; empty means send no AUTH.
	Password string
	// TLS, if set, is the client configuration for nodes whose client
	// ports speak only TLS; an empty ServerName is the address's host,
	// so a node's certificate must name it (an IP SAN for an IP).
	TLS *tls.Config
}

// Do is the package's Do, with AUTH first when a.Password is set: AUTH and
// the command go in one write, and a refused AUTH is the error
// ("AUTH to <addr>: WRONGPASS ...", wrapping the RedisError), unless the
// node has no password at all.
func (a Auth) Do(ctx context.Context, addr string, timeout time.Duration, args ...string) (any, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	deadline := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	nc.SetDeadline(deadline)
	var c net.Conn = nc
	if a.TLS != nil {
		cfg := a.TLS
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS with %s: %w", addr, err)
		}
		c = tc
	}
	var req []byte
	if a.Password != "" {
		auth := []string{"AUTH", a.Password}
		if a.User != "" {
			auth = []string{"AUTH", a.User, a.Password}
		}
		req = encodeCommand(auth)
	}
	req = append(req, encodeCommand(args)...)
	if _, err := c.Write(req); err != nil {
		return nil, err
	}
	r := bufio.NewReader(&budgetReader{r: c, left: maxReplyLen})
	if a.Password != "" {
		v, err := readReply(r, 0)
		if err != nil {
			return nil, err
		}
		// A node without a password refuses AUTH and runs the command
		// anyway: tolerated, so that passwords can be given to a
		// running cluster one node at a time.
		if re, ok := v.(RedisError); ok && !strings.Contains(string(re), "without any password configured") {
			return nil, fmt.Errorf("AUTH to %s: %w", addr, re)
		}
	}
	v, err := readReply(r, 0)
	if err != nil {
		return nil, err
	}
	if re, ok := v.(RedisError); ok {
		return v, re
	}
	return v, nil
}

func encodeCommand(args []string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

var errBadReply = errors.New("cluster: malformed RESP reply")

func readReply(r *bufio.Reader, depth int) (any, error) {
	if depth > 8 {
		return nil, errBadReply
	}
	line, err := r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errBadReply
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return RedisError(body), nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, errBadReply
		}
		return n, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxReplyLen {
			return nil, errBadReply
		}
		if n == -1 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxReplyLen {
			return nil, errBadReply
		}
		if n == -1 {
			return nil, nil
		}
		out := make([]any, 0, min(n, 1024))
		for range n {
			v, err := readReply(r, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: type byte %q", errBadReply, line[0])
}
