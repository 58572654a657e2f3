package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestGoRedisBuiltins(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	ctx := context.Background()
	rc := ts.client(t)

	if got, err := rc.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if got, err := rc.Do(ctx, "ping", "hello").Text(); err != nil || got != "hello" {
		t.Fatalf("PING msg = %q, %v", got, err)
	}
	if err := rc.Do(ctx, "PING", "a", "b").Err(); err == nil || err.Error() != "ERR wrong number of arguments for 'ping' command" {
		t.Fatalf("PING a b: %v", err)
	}
	if got, err := rc.Echo(ctx, "a b\r\n\x00").Result(); err != nil || got != "a b\r\n\x00" {
		t.Fatalf("ECHO = %q, %v", got, err)
	}
	if err := rc.Do(ctx, "ECHO").Err(); err == nil || err.Error() != "ERR wrong number of arguments for 'echo' command" {
		t.Fatalf("ECHO: %v", err)
	}

	info, err := rc.Info(ctx).Result()
	if err != nil || !strings.Contains(info, "# Server\r\n") || !strings.Contains(info, "# Stats\r\n") || !strings.Contains(info, "connected_clients:1\r\n") {
		t.Fatalf("INFO = %q, %v", info, err)
	}
	info, err = rc.Info(ctx, "STATS").Result()
	if err != nil || !strings.HasPrefix(info, "# Stats\r\n") || strings.Contains(info, "# Server") {
		t.Fatalf("INFO stats = %q, %v", info, err)
	}

	id, err := rc.ClientID(ctx).Result()
	if err != nil || id <= 0 {
		t.Fatalf("CLIENT ID = %d, %v", id, err)
	}
	conn := rc.Conn()
	defer conn.Close()
	if err := conn.ClientSetName(ctx, "worker-1").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := conn.ClientGetName(ctx).Result(); err != nil || got != "worker-1" {
		t.Fatalf("CLIENT GETNAME = %q, %v", got, err)
	}
	if err := conn.ClientSetName(ctx, "bad name").Err(); err == nil {
		t.Fatal("CLIENT SETNAME accepted a space")
	}
	list, err := rc.ClientList(ctx).Result()
	// go-redis sends CLIENT SETINFO LIB-NAME/LIB-VER when it connects.
	if err != nil || !strings.Contains(list, "name=worker-1 ") || !strings.Contains(list, "lib-name=go-redis") {
		t.Fatalf("CLIENT LIST = %q, %v", list, err)
	}
	if err := rc.Do(ctx, "CLIENT", "SETINFO", "LIB-VER", "1.2").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, "CLIENT", "SETINFO", "color", "red").Err(); err == nil {
		t.Fatal("CLIENT SETINFO accepted an unknown attribute")
	}
	if err := rc.Do(ctx, "CLIENT", "NOPE").Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR unknown subcommand 'NOPE'") {
		t.Fatalf("CLIENT NOPE: %v", err)
	}

	// HELLO 3 is refused so clients fall back to RESP2; HELLO 2 works.
	if err := rc.Do(ctx, "HELLO", "3").Err(); err == nil || err.Error() != "NOPROTO unsupported protocol version" {
		t.Fatalf("HELLO 3: %v", err)
	}
	hello, err := conn.Hello(ctx, 2, "", "", "from-hello").Result()
	if err != nil || hello["server"] != "memrl" || hello["proto"] != int64(2) || hello["mode"] != "standalone" {
		t.Fatalf("HELLO 2 = %v, %v", hello, err)
	}
	if got, _ := conn.ClientGetName(ctx).Result(); got != "from-hello" {
		t.Fatalf("HELLO SETNAME not applied: %q", got)
	}
	if err := rc.Do(ctx, "HELLO", "x").Err(); err == nil || !strings.Contains(err.Error(), "Protocol version is not an integer") {
		t.Fatalf("HELLO x: %v", err)
	}
	if err := rc.Do(ctx, "HELLO", "2", "BOGUS").Err(); err == nil || !strings.Contains(err.Error(), "Syntax error in HELLO option 'BOGUS'") {
		t.Fatalf("HELLO 2 BOGUS: %v", err)
	}

	if err := rc.Do(ctx, "SELECT", "0").Err(); err != nil {
		t.Fatalf("SELECT 0: %v", err)
	}
	if err := rc.Do(ctx, "SELECT", "1").Err(); err == nil || err.Error() != "ERR DB index is out of range" {
		t.Fatalf("SELECT 1: %v", err)
	}
	if err := rc.Do(ctx, "SELECT", "x").Err(); err == nil || err.Error() != "ERR value is not an integer or out of range" {
		t.Fatalf("SELECT x: %v", err)
	}

	cfg, err := rc.ConfigGet(ctx, "save").Result()
	if err != nil || len(cfg) != 1 || cfg["save"] != "" {
		t.Fatalf("CONFIG GET save = %v, %v", cfg, err)
	}
	cfg, err = rc.ConfigGet(ctx, "*").Result()
	if err != nil || cfg["appendonly"] != "no" || cfg["maxclients"] != strconv.Itoa(DefaultMaxClients) {
		t.Fatalf("CONFIG GET * = %v, %v", cfg, err)
	}
	cfg, err = rc.ConfigGet(ctx, "no-such-param").Result()
	if err != nil || len(cfg) != 0 {
		t.Fatalf("CONFIG GET unknown = %v, %v", cfg, err)
	}

	cmds, err := rc.Command(ctx).Result()
	if err != nil || cmds["ping"] == nil || cmds["ping"].Arity != -1 || cmds["echo"].Arity != -2 {
		t.Fatalf("COMMAND = %v, %v", cmds, err)
	}
	if n, err := rc.Do(ctx, "COMMAND", "COUNT").Int(); err != nil || n != len(cmds) {
		t.Fatalf("COMMAND COUNT = %d, %v (COMMAND had %d)", n, err, len(cmds))
	}
	if names, err := rc.CommandList(ctx, nil).Result(); err != nil || len(names) != len(cmds) {
		t.Fatalf("COMMAND LIST = %v, %v", names, err)
	}
	if err := rc.Do(ctx, "COMMAND", "DOCS").Err(); err != nil {
		t.Fatalf("COMMAND DOCS: %v", err)
	}
	infos, err := rc.Do(ctx, "COMMAND", "INFO", "ping", "nope").Slice()
	if err != nil || len(infos) != 2 || infos[0].([]any)[0] != "ping" || infos[1] != nil {
		t.Fatalf("COMMAND INFO = %v, %v", infos, err)
	}

	err = rc.Do(ctx, "foo", "a", "b").Err()
	if err == nil || err.Error() != "ERR unknown command 'foo', with args beginning with: 'a' 'b' " {
		t.Fatalf("unknown command: %v", err)
	}
	if err := rc.Do(ctx, "AUTH", "pw").Err(); err == nil || !strings.Contains(err.Error(), "without any password configured") {
		t.Fatalf("AUTH: %v", err)
	}

	// QUIT replies +OK and closes; the pooled client reconnects.
	if got, err := conn.Do(ctx, "QUIT").Text(); err != nil || got != "OK" {
		t.Fatalf("QUIT = %q, %v", got, err)
	}
	if err := conn.Ping(ctx).Err(); err == nil {
		t.Fatal("connection still usable after QUIT")
	}
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING on a fresh connection after QUIT: %v", err)
	}
}

func TestRegisteredCommands(t *testing.T) {
	ts := startServer(t, Config{}, func(s *Server) {
		s.Register("test.sum", 1, func(c *Ctx, args [][]byte) error {
			var sum int64
			for _, a := range args {
				n, err := strconv.ParseInt(string(a), 10, 64)
				if err != nil {
					return errNotInteger
				}
				sum += n
			}
			c.WriteInt(sum)
			return nil
		})
		s.Register("test.coded", 0, func(c *Ctx, args [][]byte) error {
			return &ReplyError{Code: "WRONGTYPE", Msg: "nope"}
		})
		s.Register("test.plain", 0, func(c *Ctx, args [][]byte) error {
			return fmt.Errorf("disk on fire")
		})
		s.Register("test.silent", 0, func(c *Ctx, args [][]byte) error { return nil })
		s.Register("test.float", 0, func(c *Ctx, args [][]byte) error {
			c.WriteArrayHeader(2)
			c.WriteFloat32(0.1)
			c.WriteFloat64(0.25)
			return nil
		})
		s.Register("test.whoami", 0, func(c *Ctx, args [][]byte) error {
			c.WriteArrayHeader(3)
			c.WriteBulkString(c.Name())
			c.WriteInt(c.ClientID())
			c.WriteBulkString(c.ClientName())
			return nil
		})
	})
	ctx := context.Background()
	rc := ts.client(t)

	for _, name := range []string{"test.sum", "TEST.SUM", "Test.Sum"} {
		if n, err := rc.Do(ctx, name, "1", "2", "39").Int64(); err != nil || n != 42 {
			t.Fatalf("%s = %d, %v", name, n, err)
		}
	}
	if err := rc.Do(ctx, "test.sum").Err(); err == nil || err.Error() != "ERR wrong number of arguments for 'test.sum' command" {
		t.Fatalf("arity: %v", err)
	}
	if err := rc.Do(ctx, "test.coded").Err(); err == nil || err.Error() != "WRONGTYPE nope" {
		t.Fatalf("coded error: %v", err)
	}
	if err := rc.Do(ctx, "test.plain").Err(); err == nil || err.Error() != "ERR disk on fire" {
		t.Fatalf("plain error: %v", err)
	}
	if err := rc.Do(ctx, "test.silent").Err(); err == nil || !strings.Contains(err.Error(), "sent no reply") {
		t.Fatalf("silent handler: %v", err)
	}
	fl, err := rc.Do(ctx, "test.float").StringSlice()
	if err != nil || len(fl) != 2 || fl[0] != "0.1" || fl[1] != "0.25" {
		t.Fatalf("floats = %q, %v", fl, err)
	}
	who, err := rc.Do(ctx, "TEST.WHOAMI").Slice()
	if err != nil || who[0] != "test.whoami" || who[1].(int64) <= 0 || who[2] != "" {
		t.Fatalf("whoami = %v, %v", who, err)
	}
	// Registered commands show up in COMMAND with arity -(minArgs+1).
	infos, err := rc.Command(ctx).Result()
	if err != nil || infos["test.sum"] == nil || infos["test.sum"].Arity != -2 {
		t.Fatalf("COMMAND test.sum = %v, %v", infos, err)
	}

	mustPanic(t, "duplicate", func() { ts.Register("TEST.SUM", 0, func(*Ctx, [][]byte) error { return nil }) })
	mustPanic(t, "builtin", func() { ts.Register("ping", 0, func(*Ctx, [][]byte) error { return nil }) })
	mustPanic(t, "blank", func() { ts.Register("a b", 0, func(*Ctx, [][]byte) error { return nil }) })
	// Registration while serving is allowed.
	ts.Register("test.late", 0, func(c *Ctx, args [][]byte) error { c.WriteOK(); return nil })
	if err := rc.Do(ctx, "test.late").Err(); err != nil {
		t.Fatalf("late registration: %v", err)
	}
}

func mustPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	fn()
}

func TestGoRedisPipeline(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	ctx := context.Background()
	rc := ts.client(t)
	const n = 600
	cmds, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			switch i % 3 {
			case 0:
				p.Echo(ctx, "m"+strconv.Itoa(i))
			case 1:
				p.Ping(ctx)
			case 2:
				p.Do(ctx, "nosuchcmd", i)
			}
		}
		return nil
	})
	if len(cmds) != n {
		t.Fatalf("%d replies, err %v", len(cmds), err)
	}
	for i, c := range cmds {
		switch i % 3 {
		case 0:
			if got := c.(*redis.StringCmd).Val(); got != "m"+strconv.Itoa(i) {
				t.Fatalf("reply %d = %q", i, got)
			}
		case 1:
			if got := c.(*redis.StatusCmd).Val(); got != "PONG" {
				t.Fatalf("reply %d = %q", i, got)
			}
		case 2:
			if e := c.Err(); e == nil || !strings.HasPrefix(e.Error(), "ERR unknown command 'nosuchcmd'") {
				t.Fatalf("reply %d err = %v", i, e)
			}
		}
	}
}

// A pipeline that arrives in one segment is answered with few writes.
func TestPipelineBatchesWrites(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	c := ts.rawConn(t)
	// Settle the connection so its goroutine is waiting for input.
	io.WriteString(c, "PING\r\n")
	br := bufio.NewReader(c)
	if line, _ := br.ReadString('\n'); line != "+PONG\r\n" {
		t.Fatalf("got %q", line)
	}
	before := ts.writes.Load()
	const n = 1000
	if _, err := io.WriteString(c, strings.Repeat("*1\r\n$4\r\nPING\r\n", n)); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if line, err := br.ReadString('\n'); err != nil || line != "+PONG\r\n" {
			t.Fatalf("reply %d = %q, %v", i, line, err)
		}
	}
	// 15 KB of input may arrive in a few segments, and 7 KB of replies fit
	// one buffer: a handful of writes, not one per command.
	if w := ts.writes.Load() - before; w > 20 {
		t.Fatalf("%d writes for %d pipelined commands", w, n)
	}
}

func TestProtocolErrorClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t, Config{Limits: Limits{MaxInlineLen: 1024}}, nil)
	ctx := context.Background()
	good := ts.client(t)
	if err := good.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, in, want string
	}{
		{"garbage array", "*1\r\n\x00\x01\x02garbage\r\n", "-ERR Protocol error: expected '$', got '\\x00'\r\n"},
		{"bad multibulk", "*zz\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"bad bulk length", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"oversized inline", strings.Repeat("x", 5000), "-ERR Protocol error: too big inline request\r\n"},
		{"unbalanced quotes", "ECHO \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		// Replies to the commands before the bad frame are still delivered.
		{"after good commands", "PING\r\nECHO hi\r\n*x\r\n", "+PONG\r\n$2\r\nhi\r\n-ERR Protocol error: invalid multibulk length\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.rawConn(t)
			if _, err := io.WriteString(c, tc.in); err != nil {
				t.Fatal(err)
			}
			if got := readUntilEOF(t, c); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if err := good.Ping(ctx).Err(); err != nil {
				t.Fatalf("other client broken: %v", err)
			}
		})
	}
}

func TestHandlerPanic(t *testing.T) {
	ts := startServer(t, Config{}, func(s *Server) {
		s.Register("test.panic", 0, func(c *Ctx, args [][]byte) error { panic("kaboom") })
		s.Register("test.half", 0, func(c *Ctx, args [][]byte) error {
			c.WriteArrayHeader(2)
			return errors.New("half a reply")
		})
	})
	ctx := context.Background()
	other := ts.client(t)
	if err := other.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	c := ts.rawConn(t)
	io.WriteString(c, "PING\r\ntest.panic\r\nPING\r\n")
	got := readUntilEOF(t, c)
	if got != "+PONG\r\n-ERR internal error while executing 'test.panic'\r\n" {
		t.Fatalf("got %q", got)
	}
	if !strings.Contains(ts.logBuf.String(), "kaboom") {
		t.Fatalf("panic not logged: %s", ts.logBuf.String())
	}

	c = ts.rawConn(t)
	io.WriteString(c, "test.half\r\nPING\r\n")
	if got := readUntilEOF(t, c); got != "*2\r\n" {
		t.Fatalf("got %q", got)
	}
	if err := other.Ping(ctx).Err(); err != nil {
		t.Fatalf("server broken after panics: %v", err)
	}
}

func TestInlineAndQuotingOverTCP(t *testing.T) {
	ts := startServer(t, Config{}, nil)
	c := ts.rawConn(t)
	io.WriteString(c, "ECHO \"a\\x41\\n\"\nECHO 'it\\'s'\r\n\r\n  \nQUIT\r\n")
	want := "$3\r\naA\n\r\n$4\r\nit's\r\n+OK\r\n"
	if got := readUntilEOF(t, c); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestMaxClients(t *testing.T) {
	ts := startServer(t, Config{MaxClients: 1}, nil)
	first := ts.rawConn(t)
	io.WriteString(first, "PING\r\n")
	br := bufio.NewReader(first)
	if line, _ := br.ReadString('\n'); line != "+PONG\r\n" {
		t.Fatalf("first: %q", line)
	}
	second := ts.rawConn(t)
	if got := readUntilEOF(t, second); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("second: %q", got)
	}
	io.WriteString(first, "PING\r\n")
	if line, _ := br.ReadString('\n'); line != "+PONG\r\n" {
		t.Fatalf("first after refusal: %q", line)
	}
}

func TestAddInfoSection(t *testing.T) {
	ts := startServer(t, Config{}, func(s *Server) {
		s.AddInfoSection("Memory_Engine", func() [][2]string {
			return [][2]string{{"collections", "3"}, {"bad:field", "multi\nline"}}
		})
	})
	rc := ts.client(t)
	got, err := rc.Info(context.Background(), "memory_engine").Result()
	if err != nil || got != "# Memory_Engine\r\ncollections:3\r\nbad field:multi line\r\n" {
		t.Fatalf("INFO memory_engine = %q, %v", got, err)
	}
	all, _ := rc.Info(context.Background()).Result()
	if !strings.Contains(all, "# Memory_Engine\r\n") {
		t.Fatalf("section missing from INFO: %q", all)
	}
	mustPanic(t, "duplicate section", func() { ts.AddInfoSection("server", func() [][2]string { return nil }) })
}
