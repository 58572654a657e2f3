// Command authflood measures how fast a client without the password can
// try passwords on a memrl (or any RESP) server: each of -conns
// connections sends "AUTH <wrong>" one at a time (or -pipeline at a time)
// and reads the answers, reconnecting whenever the server closes it, for
// -duration or until -max attempts. It prints the wrong passwords answered
// per second, in all and per connection, and how many connections the
// server closed.
//
//	go run ./bench/authflood -addr 127.0.0.1:6390 -conns 1 -duration 10s
//	go run ./bench/authflood -addr 127.0.0.1:6390 -conns 200 -duration 10s
//
// The server must require a password (--requirepass), and the tried
// password must be wrong: every answer that is not -WRONGPASS is counted
// as "other".
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	conns := flag.Int("conns", 1, "concurrent connections")
	pipeline := flag.Int("pipeline", 1, "AUTH commands sent before reading their answers")
	duration := flag.Duration("duration", 10*time.Second, "how long to try")
	maxTries := flag.Int64("max", 10_000_000, "stop after this many answers in all")
	user := flag.String("user", "", "user name to send (empty: AUTH <password>)")
	flag.Parse()
	if *conns < 1 || *pipeline < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "authflood: -conns, -pipeline and -duration must be positive")
		os.Exit(2)
	}

	var wrong, other, closed, dialErrs atomic.Int64
	deadline := time.Now().Add(*duration)
	stop := func() bool { return time.Now().After(deadline) || wrong.Load()+other.Load() >= *maxTries }
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for try := 0; !stop(); try++ {
				nc, err := net.DialTimeout("tcp", *addr, 5*time.Second)
				if err != nil {
					dialErrs.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				// The deadline bounds a read the server never answers.
				nc.SetDeadline(deadline.Add(5 * time.Second))
				br := bufio.NewReader(nc)
				var req strings.Builder
				for j := 0; j < *pipeline; j++ {
					pass := fmt.Sprintf("wrong-%d-%d-%d", i, try, j)
					if *user != "" {
						fmt.Fprintf(&req, "*3\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(*user), *user, len(pass), pass)
					} else {
						fmt.Fprintf(&req, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(pass), pass)
					}
				}
				msg := []byte(req.String())
			conn:
				for !stop() {
					if _, err := nc.Write(msg); err != nil {
						break
					}
					for j := 0; j < *pipeline; j++ {
						line, err := br.ReadString('\n')
						if err != nil {
							closed.Add(1)
							break conn
						}
						if strings.HasPrefix(line, "-WRONGPASS") {
							wrong.Add(1)
						} else {
							other.Add(1)
						}
					}
				}
				nc.Close()
			}
		}(i)
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	w := wrong.Load()
	fmt.Printf("conns=%d pipeline=%d elapsed=%.1fs wrong_passwords=%d (%.0f/s in all, %.1f/s per connection) other_replies=%d closed_by_server=%d dial_errors=%d\n",
		*conns, *pipeline, el, w, float64(w)/el, float64(w)/el/float64(*conns), other.Load(), closed.Load(), dialErrs.Load())
}
