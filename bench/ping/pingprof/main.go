// Command pingprof serves memrl's protocol exactly as `memrl serve --sync
// none` does (server.New, RegisterMem, engine.Open of a temporary folder)
// while writing a CPU profile, so that the PING path can be profiled under
// redis-benchmark without giving the real server a profiling flag:
//
//	go build -o /tmp/pingprof ./bench/ping/pingprof
//	/tmp/pingprof --addr 127.0.0.1:16391 --cpuprofile /tmp/ping.pprof --duration 20s &
//	redis-benchmark -p 16391 -c 50 -n 2000000 -P 16 -t ping -q
//	go tool pprof -top /tmp/pingprof /tmp/ping.pprof
//
// It profiles for --duration (or until SIGINT/SIGTERM), then stops the
// server, removes its folder and exits. bench/ping/profile.sh does all of
// the above.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:16391", "loopback address to serve on")
	out := flag.String("cpuprofile", "ping.pprof", "CPU profile to write")
	dur := flag.Duration("duration", 20*time.Second, "how long to serve and profile")
	flag.Parse()
	if err := run(*addr, *out, *dur); err != nil {
		log.Fatal(err)
	}
}

func run(addr, out string, dur time.Duration) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("pingprof: %s is not a loopback address", addr)
	}
	dir, err := os.MkdirTemp("", "memrl-pingprof-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncNone})
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := server.New(server.Config{Addr: addr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	srv.RegisterMem(db)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		ln.Close()
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		ln.Close()
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Printf("pingprof: serving on %s, profiling for %v into %s", addr, dur, out)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-time.After(dur):
	case <-sigs:
	case err := <-errc:
		pprof.StopCPUProfile()
		return err
	}
	pprof.StopCPUProfile()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	<-errc
	log.Printf("pingprof: wrote %s", out)
	return nil
}
