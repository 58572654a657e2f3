package hostile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// startServer serves a fresh database on a loopback port, in process, and
// stops it when the test ends.
func startServer(t *testing.T) string {
	t.Helper()
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterMem(db)
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-errc; !errors.Is(err, server.ErrServerClosed) {
			t.Errorf("ListenAndServe: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("db.Close: %v", err)
		}
	})
	for srv.Addr() == nil {
		select {
		case err := <-errc:
			t.Fatal(err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return srv.Addr().String()
}

func shortConfig(addr string, kinds ...Kind) Config {
	return Config{
		Addr: addr, Quiet: 400 * time.Millisecond, Duration: 1500 * time.Millisecond,
		Hostile: 16, Stall: 300 * time.Millisecond, Fill: 256 << 10, Pause: time.Millisecond,
		Kinds: kinds, Memories: 200, Alpha: 0.25, Seed: 7,
	}
}

// TestRunWithoutHTTP runs every attack but http for two seconds: the
// honest client must see no wrong answer, the server must answer a fresh
// connection, and every attack must have been made.
func TestRunWithoutHTTP(t *testing.T) {
	addr := startServer(t)
	var kinds []Kind
	for _, k := range AllKinds {
		if k != HTTP {
			kinds = append(kinds, k)
		}
	}
	rep, err := Run(shortConfig(addr, kinds...))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	t.Log("\n" + out.String())
	if !rep.OK() {
		t.Fatalf("run failed: %d wrong answers %v, reconnected %v", rep.Wrong, rep.WrongLog, rep.Reconnected)
	}
	if len(rep.Quiet) == 0 || len(rep.Attack) == 0 {
		t.Fatalf("honest commands: %d quiet, %d during the attack", len(rep.Quiet), len(rep.Attack))
	}
	if rep.FinalCount == 0 {
		t.Fatal("the honest client kept no memories")
	}
	for _, k := range kinds {
		if rep.Conns[k] == 0 {
			t.Errorf("attack %s made no connection: %v", k, rep.Ends[k])
		}
	}
	// Malformed frames get Redis's protocol error and a closed connection.
	if rep.Ends[Malformed][endClosedAfterErr] == 0 {
		t.Errorf("no malformed frame got an ERR reply and a close: %v", rep.Ends[Malformed])
	}
}

// TestHTTPDropIsNoticed runs only the http attack, whose body is
// "MEM.DROP honest". Whether or not the server runs it, the checker must be
// sound: every drop that got through (an +OK came back) must show up as a
// vanished collection and a wrong answer, and without drops there must be
// no wrong answer.
func TestHTTPDropIsNoticed(t *testing.T) {
	addr := startServer(t)
	rep, err := Run(shortConfig(addr, HTTP))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	t.Log("\n" + out.String())
	if rep.Conns[HTTP] == 0 {
		t.Fatal("no http attack was made")
	}
	if !rep.Reconnected {
		t.Fatalf("no PONG on a fresh connection: %s", rep.ReconnectErr)
	}
	if rep.HTTPRan > 0 && (rep.Vanished == 0 || rep.Wrong == 0) {
		t.Fatalf("%d drops got through but the honest client saw %d vanished collections, %d wrong answers",
			rep.HTTPRan, rep.Vanished, rep.Wrong)
	}
	if rep.HTTPRan == 0 && rep.Wrong != 0 {
		t.Fatalf("no drop got through, yet %d wrong answers: %v", rep.Wrong, rep.WrongLog)
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6390": true, "127.1.2.3:1": true, "[::1]:6390": true, "localhost:6390": true,
		"10.0.0.1:6390": false, "example.com:6390": false, "0.0.0.0:6390": false, "6390": false,
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v, want ok %v", addr, err, ok)
		}
	}
}

// TestMainRefusesBadArguments: no traffic leaves loopback, and a typo in
// --kinds is an error, not a silently smaller run.
func TestMainRefusesBadArguments(t *testing.T) {
	var out bytes.Buffer
	if err := Main([]string{"--addr", "192.0.2.1:6390", "--duration", "1ms", "--quiet", "1ms"}, &out); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("non-loopback --addr: %v, want ErrNotLoopback", err)
	}
	if err := Main([]string{"--kinds", "malformed,nosuch"}, &out); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown attack: %v", err)
	}
}
