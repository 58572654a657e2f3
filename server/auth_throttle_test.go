package server

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// A client without the password could try 25,000 wrong passwords a second
// on one connection (267,000 pipelined), which stayed open after any
// number of failures. Now the connection is closed after MaxAuthFailures,
// counting AUTH and HELLO ... AUTH alike, and a success in between does
// not reset the count (a read-only user's password must not buy more
// guesses at another's).
func TestAuthFailuresCloseConnection(t *testing.T) {
	ts := authServer(t, Config{AuthFailureDelay: time.Millisecond})
	s := newRawSession(t, ts)
	for i := 1; i <= DefaultMaxAuthFailures; i++ {
		var got string
		switch {
		case i == 3:
			if got := s.do("AUTH", "reader", "r3ad"); got != "+OK" {
				t.Fatalf("AUTH reader: %q", got)
			}
			got = s.do("AUTH", "default", "nope")
		case i%2 == 0:
			got = s.do("HELLO", "2", "AUTH", "default", "nope")
		default:
			got = s.do("AUTH", "nope")
		}
		if !strings.HasPrefix(got, "-WRONGPASS") {
			t.Fatalf("failure %d: %q", i, got)
		}
	}
	s.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if l, err := s.br.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("after %d failed AUTHs the connection is still open: read %q, %v", DefaultMaxAuthFailures, l, err)
	}
	if n := ts.statAuthFailures.Load(); n != DefaultMaxAuthFailures {
		t.Fatalf("auth_failures %d, want %d", n, DefaultMaxAuthFailures)
	}
	// Other connections are not affected.
	if got := newRawSession(t, ts).do("AUTH", "s3cret"); got != "+OK" {
		t.Fatalf("AUTH on a new connection: %q", got)
	}
}

// Each failed AUTH on a connection is answered later than the one before:
// the delay doubles from AuthFailureDelay. (Lower bounds only: a loaded
// machine can only make the answers later.)
func TestAuthFailureDelayGrows(t *testing.T) {
	const base = 40 * time.Millisecond
	ts := authServer(t, Config{AuthFailureDelay: base})
	s := newRawSession(t, ts)
	for i := 0; i < 4; i++ {
		start := time.Now()
		if got := s.do("AUTH", "nope"); !strings.HasPrefix(got, "-WRONGPASS") {
			t.Fatal(got)
		}
		if el, want := time.Since(start), base<<i; el < want {
			t.Fatalf("failure %d answered after %v, want at least %v", i+1, el, want)
		}
	}
	// A right password is answered at once (no lower bound to check),
	// and the connection works.
	if got := s.do("AUTH", "s3cret"); got != "+OK" {
		t.Fatal(got)
	}
	if got := s.do("WRITE"); got != "+wrote" {
		t.Fatal(got)
	}
}

// authFailureDelay's schedule: doubling from the base, capped at
// MaxAuthFailureDelay unless the base itself is larger.
func TestAuthFailureDelaySchedule(t *testing.T) {
	for _, tc := range []struct {
		base time.Duration
		n    int
		want time.Duration
	}{
		{100 * time.Millisecond, 1, 100 * time.Millisecond},
		{100 * time.Millisecond, 2, 200 * time.Millisecond},
		{100 * time.Millisecond, 5, 1600 * time.Millisecond},
		{100 * time.Millisecond, 6, MaxAuthFailureDelay},
		{100 * time.Millisecond, 1000, MaxAuthFailureDelay},
		{5 * time.Second, 3, 5 * time.Second},
		{0, 7, 0},
	} {
		if got := authFailureDelay(tc.base, tc.n); got != tc.want {
			t.Errorf("authFailureDelay(%v, %d) = %v, want %v", tc.base, tc.n, got, tc.want)
		}
	}
}

// While a failed AUTH's answer is held back, the server serves everyone
// else, transactions included (EXEC takes the transaction lock
// exclusively, so a delay taken under the shared lock would stall it), and
// Shutdown does not wait for the delay.
func TestAuthFailureDelayStallsNoOne(t *testing.T) {
	ts := authServer(t, Config{AuthFailureDelay: time.Minute})
	a := newRawSession(t, ts)
	if _, err := a.c.Write([]byte("AUTH nope\r\n")); err != nil {
		t.Fatal(err)
	}
	answered := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(a.c).ReadString('\n')
		answered <- l
	}()
	deadline := time.Now().Add(10 * time.Second)
	for ts.statAuthFailures.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the failed AUTH was not counted")
		}
		time.Sleep(time.Millisecond)
	}

	b := newRawSession(t, ts)
	b.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for _, step := range []struct{ args, want []string }{
		{[]string{"PING"}, []string{"+PONG"}},
		{[]string{"AUTH", "s3cret"}, []string{"+OK"}},
		{[]string{"MULTI"}, []string{"+OK"}},
		{[]string{"WRITE"}, []string{"+QUEUED"}},
		{[]string{"EXEC"}, []string{"*1", "+wrote"}},
	} {
		if got := b.do(step.args...); got != step.want[0] {
			t.Fatalf("%q while another connection's failed AUTH waits: %q", step.args, got)
		}
		for _, w := range step.want[1:] {
			if got := b.line(); got != w {
				t.Fatalf("%q: %q, want %q", step.args, got, w)
			}
		}
	}
	select {
	case l := <-answered:
		t.Fatalf("the failed AUTH was answered at once: %q", l)
	default:
	}
	// The cleanup's Shutdown (5 s) must end the held connection.
}

// A failed AUTH logged its user-name field verbatim, so a password typed
// there (AUTH <password> <something>) landed in the log. Now only a
// configured user's name is logged; anything else is "unknown".
func TestAuthFailureLogHidesUserName(t *testing.T) {
	const secret = "MyS3cretPassw0rd"
	ts := authServer(t, Config{AuthFailureDelay: -1})
	if got := newRawSession(t, ts).do("AUTH", secret, "x"); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatal(got)
	}
	log := ts.logBuf.String()
	if strings.Contains(log, secret) {
		t.Fatalf("the log holds the user-name field of a failed AUTH:\n%s", log)
	}
	if !strings.Contains(log, "authentication failed") || !strings.Contains(log, "user_known=false") {
		t.Fatalf("no log line for the failed AUTH of an unknown user:\n%s", log)
	}

	ts = authServer(t, Config{AuthFailureDelay: -1})
	if got := newRawSession(t, ts).do("HELLO", "2", "AUTH", "reader", secret); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatal(got)
	}
	if log := ts.logBuf.String(); !strings.Contains(log, "user=reader") || !strings.Contains(log, "user_known=true") {
		t.Fatalf("a known user's failed AUTH does not name the user:\n%s", log)
	}
}

// Many connections together get no more than AuthFailureRate failed AUTHs
// answered a second (after a burst of one second's worth): 60 failures
// over 6 connections at 20/s take at least (60-20)/20 = 2 s. Before, 50
// connections got 32,000 a second.
func TestAuthFailureRateServerWide(t *testing.T) {
	const rate, conns, each = 20, 6, 10
	ts := authServer(t, Config{AuthFailureDelay: -1, MaxAuthFailures: -1, AuthFailureRate: rate})
	sessions := make([]*rawSession, conns)
	for i := range sessions {
		sessions[i] = newRawSession(t, ts)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan string, conns*each)
	for _, s := range sessions {
		wg.Add(1)
		go func(s *rawSession) {
			defer wg.Done()
			br := s.br
			for j := 0; j < each; j++ {
				if _, err := s.c.Write([]byte("AUTH nope\r\n")); err != nil {
					errs <- err.Error()
					return
				}
				l, err := br.ReadString('\n')
				if err != nil || !strings.HasPrefix(l, "-WRONGPASS") {
					errs <- l
					return
				}
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("a failed AUTH answered %q", e)
	}
	if el, want := time.Since(start), time.Duration(conns*each-rate)*time.Second/rate; el < want*9/10 {
		t.Fatalf("%d failed AUTHs over %d connections answered in %v; at %d/s they take at least %v", conns*each, conns, el, rate, want)
	}
}
