package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

// fairUsers are the users of the admission tests: an administrator, and
// two read-only users.
var fairUsers = []User{
	{Name: DefaultUser, Password: "s3cret"},
	{Name: "victim", Password: "v1ctim", ReadOnly: true},
	{Name: "attacker", Password: "att4ck", ReadOnly: true},
}

// startFair serves a fresh database with cfg (fairUsers added), with
// register run before Serve too, and fills collection "f" (dimension 16,
// n memories) as the administrator.
func startFair(t *testing.T, cfg Config, n int, register func(*Server)) *testServer {
	t.Helper()
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg.Users = fairUsers
	ts := startServer(t, cfg, func(s *Server) {
		s.RegisterMem(db)
		if register != nil {
			register(s)
		}
	})
	admin := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "s3cret", MaxRetries: -1})
	defer admin.Close()
	mustDo(t, admin, "MEM.CREATE", "f", "DIM", 16, "METRIC", "L2")
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < n; i += 500 {
		args := []any{"MEM.MADD", "f"}
		for range min(500, n-i) {
			args = append(args, "FP32", fp32(randVec(rng, 16)...))
		}
		mustDo(t, admin, args...)
	}
	return ts
}

func randVec(rng *rand.Rand, d int) []float32 {
	v := make([]float32, d)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// userClient is a go-redis client authenticated as name.
func userClient(t *testing.T, ts *testServer, name string) *redis.Client {
	t.Helper()
	for _, u := range fairUsers {
		if u.Name == name {
			c := redis.NewClient(&redis.Options{Addr: ts.addr, Username: u.Name, Password: u.Password, MaxRetries: -1, PoolSize: 1})
			t.Cleanup(func() { c.Close() })
			return c
		}
	}
	t.Fatalf("no user %q", name)
	return nil
}

// waitGate polls until the gate's state satisfies ok (a generous
// deadline, not a sleep).
func waitGate(t *testing.T, g *searchGate, what string, ok func(running, queued int) bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		r, q, _ := g.state()
		if ok(r, q) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: running %d, queued %d after 30 s", what, r, q)
		}
	}
}

// TestSearchFairUnderFlood: a read-only user floods the server with
// MEM.MRETRIEVE from 16 connections (1,024 one-query steps each, K1 320)
// on one search slot; another read-only user's 20 MEM.RETRIEVEs all
// answer, none of them waiting for a slot (a user with no step running
// starts one at once), while the flooder's steps wait their turn (the
// gate's trace, not a time). When the flood ends no slot is held or
// awaited.
func TestSearchFairUnderFlood(t *testing.T) {
	var mu sync.Mutex
	var events []string
	ts := startFair(t, Config{SearchSlots: 1}, 3000, func(s *Server) {
		s.gate.trace = func(ev byte, user string) {
			mu.Lock()
			events = append(events, string(ev)+user)
			mu.Unlock()
		}
	})
	rng := rand.New(rand.NewPCG(7, 8))
	var cmd strings.Builder
	n := 1024
	args := []string{"MEM.MRETRIEVE", "f", "K1", "320", "QUERIES", strconv.Itoa(n)}
	for range n {
		args = append(args, "FP32", fp32(randVec(rng, 16)...))
	}
	fmt.Fprintf(&cmd, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&cmd, "$%d\r\n%s\r\n", len(a), a)
	}
	flood := []byte(cmd.String())

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	floodErr := make(chan error, 16)
	for range 16 {
		c := ts.rawConn(t)
		c.SetDeadline(time.Now().Add(2 * time.Minute))
		br := bufio.NewReader(c)
		if _, err := c.Write([]byte("*3\r\n$4\r\nAUTH\r\n$8\r\nattacker\r\n$6\r\natt4ck\r\n")); err != nil {
			t.Fatal(err)
		}
		if l, err := br.ReadString('\n'); err != nil || l != "+OK\r\n" {
			t.Fatalf("AUTH attacker: %q %v", l, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100 && ctx.Err() == nil; i++ {
				if _, err := c.Write(flood); err != nil {
					floodErr <- err
					return
				}
				// The reply: an array of n arrays (only its first line
				// is checked, the rest read and dropped), or -TIMEOUT:
				// 16 connections of 1,024 steps on one slot may pass
				// busy-timeout.
				l, err := br.ReadString('\n')
				if err == nil && strings.HasPrefix(l, "-TIMEOUT ") {
					continue
				}
				if err != nil || l != "*"+strconv.Itoa(n)+"\r\n" {
					floodErr <- fmt.Errorf("MEM.MRETRIEVE reply %q %v", l, err)
					return
				}
				if err := skipReplies(br, n); err != nil {
					floodErr <- err
					return
				}
			}
		}()
	}
	// The flood is on once steps wait for the slot.
	waitGate(t, &ts.gate, "flood", func(_, q int) bool { return q >= 8 })

	victim := userClient(t, ts, "victim")
	for i := range 20 {
		res, err := victim.Do(context.Background(), "MEM.RETRIEVE", "f", "FP32", fp32(randVec(rng, 16)...)).Slice()
		if err != nil || len(res) != 5 {
			t.Fatalf("victim's retrieval %d during the flood: %d rows, %v", i, len(res), err)
		}
	}
	stop()
	wg.Wait()
	close(floodErr)
	for err := range floodErr {
		t.Errorf("flood: %v", err)
	}
	waitGate(t, &ts.gate, "after the flood", func(r, q int) bool { return r == 0 && q == 0 })

	mu.Lock()
	defer mu.Unlock()
	count := map[string]int{}
	for _, e := range events {
		count[e]++
	}
	if count["wvictim"] != 0 {
		t.Fatalf("the victim waited %d times for a slot, want never", count["wvictim"])
	}
	if count["wattacker"] < 100 {
		t.Fatalf("the flooder waited %d times: the flood did not contend for the slot", count["wattacker"])
	}
	t.Logf("flooder: %d steps waited, %d granted from the queue", count["wattacker"], count["gattacker"])
}

// skipReplies reads and drops n RESP replies.
func skipReplies(br *bufio.Reader, n int) error {
	for range n {
		l, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		switch l[0] {
		case '*':
			k, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
			if err := skipReplies(br, k); err != nil {
				return err
			}
		case '$':
			k, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
			if k >= 0 {
				if _, err := br.Discard(k + 2); err != nil {
					return err
				}
			}
		case '-':
			return errors.New(strings.TrimSpace(l))
		}
	}
	return nil
}

// TestSearchAdmissionWaitEnds: a search waiting for a slot (its user has
// a step running, and every slot is held) is bound by
// its command's context: past busy-timeout it answers -TIMEOUT (in EXEC
// too, as its element) having run nothing, and a client that hangs up
// leaves the queue; neither keeps a slot, and INFO counts the waits.
func TestSearchAdmissionWaitEnds(t *testing.T) {
	ts := startFair(t, Config{SearchSlots: 1, BusyTimeout: 300 * time.Millisecond}, 100, nil)
	// The test holds the only slot as a step of the victim's (as if from
	// another of its connections), so its searches may not borrow.
	if !ts.gate.tryAcquire("victim") {
		t.Fatal("the slot is taken")
	}
	victim := userClient(t, ts, "victim")
	ctx := context.Background()
	q := fp32(randVec(rand.New(rand.NewPCG(1, 1)), 16)...)
	err := victim.Do(ctx, "MEM.RETRIEVE", "f", "FP32", q).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "TIMEOUT ") {
		t.Fatalf("MEM.RETRIEVE waiting past busy-timeout: %v, want -TIMEOUT", err)
	}
	cmds, err := victim.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "MEM.RETRIEVE", "f", "FP32", q)
		p.Do(ctx, "MEM.MRETRIEVE", "f", "QUERIES", 1, "FP32", q)
		return nil
	})
	for i, c := range cmds {
		if err := c.Err(); err == nil || !strings.HasPrefix(err.Error(), "TIMEOUT ") {
			t.Fatalf("EXEC element %d waiting past busy-timeout: %v, want -TIMEOUT", i, err)
		}
	}
	if r, qd, _ := ts.gate.state(); r != 1 || qd != 0 {
		t.Fatalf("after the timeouts: running %d, queued %d; want 1 (the test's), 0", r, qd)
	}

	// A client that hangs up while waiting (busy-timeout off).
	ts2 := startFair(t, Config{SearchSlots: 1, BusyTimeout: -1}, 100, nil)
	ts2.gate.tryAcquire("victim")
	c := ts2.rawConn(t)
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "*3\r\n$4\r\nAUTH\r\n$6\r\nvictim\r\n$6\r\nv1ctim\r\n")
	if l, err := br.ReadString('\n'); err != nil || l != "+OK\r\n" {
		t.Fatalf("AUTH: %q %v", l, err)
	}
	fmt.Fprintf(c, "*4\r\n$12\r\nMEM.RETRIEVE\r\n$1\r\nf\r\n$4\r\nFP32\r\n$%d\r\n%s\r\n", len(q), q)
	waitGate(t, &ts2.gate, "the retrieval waits", func(_, q int) bool { return q == 1 })
	c.(*net.TCPConn).CloseWrite() // a client gone, as busy.go's watcher sees it
	waitGate(t, &ts2.gate, "the hang-up ends the wait", func(_, q int) bool { return q == 0 })
	if got := ts2.gate.cancelled.Load(); got != 1 {
		t.Fatalf("cancelled waits = %d, want 1", got)
	}

	// Given back, the slot serves the next search at once.
	ts.gate.release("victim")
	if err := victim.Do(ctx, "MEM.RETRIEVE", "f", "FP32", q).Err(); err != nil {
		t.Fatalf("MEM.RETRIEVE with the slot free: %v", err)
	}
	info, err := victim.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"search_slots:1\r\n", "search_running:0\r\n", "search_queued:0\r\n",
		"search_admissions_waited:2\r\n", "search_admission_wait_cancelled:2\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO stats lacks %q:\n%s", strings.TrimSpace(want), info)
		}
	}
}

// TestMaxClientsPerUser: with MaxClientsPerUser 2, the third connection
// authenticated as one user is refused with Redis's max-clients message
// naming the user and closed, by AUTH and by HELLO … AUTH alike, while
// another user still connects; RESET and a closed connection give their
// place back, and AUTH again as the same user takes none.
func TestMaxClientsPerUser(t *testing.T) {
	ts := startServer(t, Config{MaxClientsPerUser: 2, Users: fairUsers}, nil)
	const refusal = "-ERR max number of clients reached for user 'attacker' (maxclients-per-user 2)"
	auth := func(s *rawSession) string { return s.do("AUTH", "attacker", "att4ck") }
	a1, a2 := newRawSession(t, ts), newRawSession(t, ts)
	if r1, r2 := auth(a1), auth(a2); r1 != "+OK" || r2 != "+OK" {
		t.Fatalf("two AUTHs: %q %q", r1, r2)
	}
	if r := auth(a1); r != "+OK" { // the same user again: no second place
		t.Fatalf("AUTH again as the same user: %q", r)
	}
	a3 := newRawSession(t, ts)
	if r := auth(a3); r != refusal {
		t.Fatalf("third AUTH: %q, want %q", r, refusal)
	}
	if rest := readUntilEOF(t, a3.c); rest != "" {
		t.Fatalf("after the refusal the server sent %q, want the connection closed", rest)
	}
	a4 := newRawSession(t, ts)
	if r := a4.do("HELLO", "2", "AUTH", "attacker", "att4ck"); r != refusal {
		t.Fatalf("HELLO AUTH past the limit: %q", r)
	}
	// Another user is not affected.
	v := newRawSession(t, ts)
	if r := v.do("AUTH", "victim", "v1ctim"); r != "+OK" {
		t.Fatalf("AUTH victim: %q", r)
	}
	if r := v.do("PING"); r != "+PONG" {
		t.Fatalf("PING: %q", r)
	}
	// RESET gives a place back.
	if r := a2.do("RESET"); r != "+RESET" {
		t.Fatalf("RESET: %q", r)
	}
	a5 := newRawSession(t, ts)
	if r := auth(a5); r != "+OK" {
		t.Fatalf("AUTH after a RESET: %q", r)
	}
	// A closed connection gives its place back (once its goroutine ends).
	a1.c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		s := newRawSession(t, ts)
		r := auth(s)
		if r == "+OK" {
			break
		}
		if r != refusal || time.Now().After(deadline) {
			t.Fatalf("AUTH after a connection closed: %q", r)
		}
		time.Sleep(5 * time.Millisecond)
	}
	hdr := v.do("INFO", "clients")
	n, err := strconv.Atoi(strings.TrimPrefix(hdr, "$"))
	if err != nil {
		t.Fatalf("INFO clients: %q", hdr)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(v.br, body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "maxclients_per_user:2\r\n") {
		t.Fatalf("INFO clients lacks maxclients_per_user:2: %q", body)
	}
	if got := ts.perUser.refused.Load(); got < 2 {
		t.Fatalf("refused = %d, want at least 2", got)
	}
}

// TestPerUserLimitDefault: the default is three quarters of maxclients,
// on a server with users only.
func TestPerUserLimitDefault(t *testing.T) {
	for _, c := range []struct {
		cfg, max int
		users    bool
		want     int
	}{
		{0, 10000, true, 7500}, {0, 3, true, 3}, {0, 200, true, 150}, {5, 200, true, 5},
		{-1, 200, true, 0}, {0, 200, false, 0}, {5, 200, false, 0},
	} {
		if got := perUserLimit(c.cfg, c.max, c.users); got != c.want {
			t.Errorf("perUserLimit(%d, %d, %v) = %d, want %d", c.cfg, c.max, c.users, got, c.want)
		}
	}
}
