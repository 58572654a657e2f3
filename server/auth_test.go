package server

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// rawSession sends RESP commands on a raw connection and reads one reply
// line (or a bulk's header and body) for each.
type rawSession struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func newRawSession(t *testing.T, ts *testServer) *rawSession {
	c := ts.rawConn(t)
	return &rawSession{t: t, c: c, br: bufio.NewReader(c)}
}

// do sends args as a RESP array and returns the first line of the reply.
func (s *rawSession) do(args ...string) string {
	s.t.Helper()
	var b strings.Builder
	b.WriteString("*" + itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	if _, err := s.c.Write([]byte(b.String())); err != nil {
		s.t.Fatalf("write: %v", err)
	}
	return s.line()
}

func (s *rawSession) line() string {
	s.t.Helper()
	l, err := s.br.ReadString('\n')
	if err != nil {
		s.t.Fatalf("read: %v (got %q)", err, l)
	}
	return strings.TrimRight(l, "\r\n")
}

func itoa(n int) string { return strconv.Itoa(n) }

// authServer requires a password: "default" with "s3cret" (read-write) and
// "reader" with "r3ad" (read-only). WRITE is a write command, READ a
// read-only one.
func authServer(t *testing.T, cfg Config) *testServer {
	cfg.Users = []User{{Name: DefaultUser, Password: "s3cret"}, {Name: "reader", Password: "r3ad", ReadOnly: true}}
	return startServer(t, cfg, func(s *Server) {
		s.Register("WRITE", 0, func(c *Ctx, _ [][]byte) error { c.WriteSimple("wrote"); return nil })
		s.Register("READ", 0, func(c *Ctx, _ [][]byte) error { c.WriteSimple("read"); return nil }, ReadOnly)
	})
}

func TestAuthRequired(t *testing.T) {
	ts := authServer(t, Config{})
	s := newRawSession(t, ts)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"WRITE"}, "-NOAUTH Authentication required."},
		{[]string{"READ"}, "-NOAUTH Authentication required."},
		{[]string{"INFO"}, "-NOAUTH Authentication required."},
		{[]string{"NOSUCHCMD"}, "-NOAUTH Authentication required."}, // the command set stays hidden
		{[]string{"PING"}, "+PONG"},
		{[]string{"HELLO", "2"}, "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{[]string{"AUTH", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", "s3creT"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", "reader", "s3cret"}, "-WRONGPASS invalid username-password pair or user is disabled."}, // another user's password
		{[]string{"AUTH", "nobody", "s3cret"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"WRITE"}, "-NOAUTH Authentication required."},
		{[]string{"AUTH", "s3cret"}, "+OK"},
		{[]string{"WRITE"}, "+wrote"},
		{[]string{"READ"}, "+read"},
		{[]string{"AUTH", "reader", "r3ad"}, "+OK"}, // re-authenticating switches user
		{[]string{"READ"}, "+read"},
		{[]string{"WRITE"}, "-NOPERM User reader has no permissions to run the 'write' command"},
		{[]string{"AUTH", "default", "s3cret"}, "+OK"},
		{[]string{"WRITE"}, "+wrote"},
	} {
		if got := s.do(tc.args...); got != tc.want {
			t.Fatalf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
	if n := ts.statAuthFailures.Load(); n != 4 {
		t.Errorf("auth failures counted %d, want 4", n)
	}
}

func TestAuthHello(t *testing.T) {
	ts := authServer(t, Config{})
	s := newRawSession(t, ts)
	if got := s.do("HELLO", "2", "AUTH", "default", "nope"); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatalf("HELLO with a wrong password: %q", got)
	}
	if got := s.do("WRITE"); !strings.HasPrefix(got, "-NOAUTH") {
		t.Fatalf("after a failed HELLO AUTH: %q", got)
	}
	if got := s.do("HELLO", "2", "AUTH", "reader", "r3ad", "SETNAME", "agent"); got != "*14" {
		t.Fatalf("HELLO AUTH: %q", got)
	}
	for range 14 { // the HELLO map: 7 pairs of bulk strings / integers
		if l := s.line(); strings.HasPrefix(l, "$") {
			s.line()
		}
	}
	if got := s.do("READ"); got != "+read" {
		t.Fatalf("READ after HELLO AUTH: %q", got)
	}
	if got := s.do("WRITE"); !strings.HasPrefix(got, "-NOPERM") {
		t.Fatalf("WRITE as reader: %q", got)
	}
}

// TestAuthPreAuthLimits: before AUTH a client may send only small frames,
// so that without the password nobody can make the server buffer much.
func TestAuthPreAuthLimits(t *testing.T) {
	ts := authServer(t, Config{})
	big := strings.Repeat("x", 20<<10)

	s := newRawSession(t, ts)
	if got := s.do("PING", big); got != "-ERR Protocol error: invalid bulk length" {
		t.Fatalf("20 KiB bulk before AUTH: %q", got)
	}
	s = newRawSession(t, ts)
	args := append([]string{"PING"}, strings.Split(strings.Repeat("a ", 11), " ")[:11]...)
	if got := s.do(args...); got != "-ERR Protocol error: invalid multibulk length" {
		t.Fatalf("12-element array before AUTH: %q", got)
	}
	s = newRawSession(t, ts)
	if _, err := s.c.Write([]byte("PING " + strings.Repeat("y", 5<<10) + "\r\n")); err != nil {
		t.Fatal(err)
	}
	if got := s.line(); got != "-ERR Protocol error: too big inline request" {
		t.Fatalf("5 KiB inline before AUTH: %q", got)
	}

	s = newRawSession(t, ts)
	if got := s.do("AUTH", "s3cret"); got != "+OK" {
		t.Fatal(got)
	}
	if got := s.do("ECHO", big); got != "$"+itoa(len(big)) {
		t.Fatalf("20 KiB bulk after AUTH: %q", got)
	}
}

func TestAuthGoRedis(t *testing.T) {
	ts := authServer(t, Config{})
	ctx := context.Background()
	for _, tc := range []struct {
		user, pass string
		readOnly   bool
	}{{"", "s3cret", false}, {"default", "s3cret", false}, {"reader", "r3ad", true}} {
		c := redis.NewClient(&redis.Options{Addr: ts.addr, Username: tc.user, Password: tc.pass, MaxRetries: -1})
		if err := c.Do(ctx, "READ").Err(); err != nil {
			t.Fatalf("%s: READ: %v", tc.user, err)
		}
		err := c.Do(ctx, "WRITE").Err()
		if tc.readOnly != (err != nil && strings.HasPrefix(err.Error(), "NOPERM")) {
			t.Fatalf("%s: WRITE: %v", tc.user, err)
		}
		c.Close()
	}
	c := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "bad", MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("a wrong password: %v", err)
	}
}

// TestAuthNotConfigured: without users every client has full access, and
// AUTH behaves as on a Redis server without requirepass.
func TestAuthNotConfigured(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	s := newRawSession(t, ts)
	if got := s.do("AUTH", "x"); !strings.HasPrefix(got, "-ERR AUTH <password> called without any password configured") {
		t.Fatalf("AUTH x: %q", got)
	}
	if got := s.do("AUTH", "default", "anything"); got != "+OK" {
		t.Fatalf("AUTH default anything: %q", got)
	}
	if got := s.do("AUTH", "someone", "x"); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatalf("AUTH someone x: %q", got)
	}
}

func TestParseUser(t *testing.T) {
	u, err := ParseUser("agent:pa:ss:readonly")
	if err != nil || u != (User{Name: "agent", Password: "pa:ss", ReadOnly: true}) {
		t.Fatalf("ParseUser = %+v, %v", u, err)
	}
	u, err = ParseUser("ops:pw:readwrite")
	if err != nil || u.ReadOnly {
		t.Fatalf("ParseUser = %+v, %v", u, err)
	}
	for _, bad := range []string{"agent", "agent:pw", "agent:pw:admin", ":pw:readonly", "agent::readonly", "a b:pw:readonly"} {
		_, err := ParseUser(bad)
		if err == nil {
			t.Errorf("ParseUser(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "pw") && bad != "agent:pw" {
			t.Errorf("ParseUser(%q) error shows the password: %v", bad, err)
		}
	}
	if _, err := New(Config{Users: []User{{Name: "a", Password: "x"}, {Name: "a", Password: "y"}}}); !errors.Is(err, errDuplicateUser) {
		t.Errorf("a user given twice: %v", err)
	}
	if _, err := New(Config{Users: []User{{Name: "a"}}}); err == nil {
		t.Error("an empty password was accepted")
	}
}

func TestAuthenticatorCheck(t *testing.T) {
	a, err := newAuthenticator([]User{{Name: "default", Password: "abc"}, {Name: "b", Password: "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pass string
		want       string
	}{{"default", "abc", "default"}, {"b", "abc", "b"}, {"default", "abd", ""}, {"default", "ab", ""}, {"default", "abcd", ""}, {"c", "abc", ""}, {"default", "", ""}} {
		got := ""
		if u := a.check([]byte(tc.name), []byte(tc.pass)); u != nil {
			got = u.Name
		}
		if got != tc.want {
			t.Errorf("check(%q, %q) = %q, want %q", tc.name, tc.pass, got, tc.want)
		}
	}
}
