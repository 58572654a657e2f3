// Command txstall measures, from outside a running `memrl serve`, what one
// client's transaction costs the others (issue 26, items 1 and 2):
//
//	stall: while a transaction of expensive reads (MEM.COUNT … FILTER with a
//	       long IN list) runs, another connection sends PING every 10 ms;
//	       the report gives the slowest PING and the transaction's time.
//	oom:   a transaction of MEM.MGETs of large payloads, whose reply would
//	       be many times --maxmemory; the report gives its elements (bulk
//	       arrays, -OOM errors), its size, and the server's peak RSS during
//	       it (VmHWM, reset first through /proc/PID/clear_refs).
//
// It talks to loopback only, and every loop is bounded in count and time.
//
//	go run ./bench/txstall -addr 127.0.0.1:6391 -mode stall -load
//	go run ./bench/txstall -addr 127.0.0.1:6391 -mode oom -pid PID -load
//
// Measured on the shared 2-core VM (load average 15-18 from other builds;
// one MEM.COUNT below took 0.4-1.5 s depending on that load), each binary
// serving the same folder in turn: memrl serve --dir D --addr
// 127.0.0.1:6391 --sync none --maxmemory 256mb, 61d8bd7 (before) and h-tx
// (after, default --busy-timeout 5000 unless said):
//
//	-mode stall -window 120s (a read-only transaction of 20 MEM.COUNT big
//	FILTER '.n in [1 x 1000]' over 200,000 memories): the slowest PING
//	before 47.0 s and 25.4 s (two runs: the whole EXEC); after 142 ms
//	(--busy-timeout 0: EXEC 18.5 s), 62 ms (EXEC 5.3 s: 12 counts, then
//	8 -TIMEOUT elements), 36 ms (--busy-timeout 2000: EXEC 2.1 s, 16
//	-TIMEOUT).
//	-mode stall -disconnect -window 120s (the client closes while the EXEC
//	runs): before, the slowest PING 23.9 s and all 20 counts ran for no
//	one (EXEC 23.9 s); after (--busy-timeout 0), 59 ms, and the EXEC
//	ended after the count running when the client left (EXEC 1.1 s, 1
//	count; INFO commandstats).
//	-mode oom -pid PID -cmds 17 -payloads 8 -payload-mb 15 (17 MEM.MGETs
//	of 120 MB each, a 2,040 MB reply): before, all 17 sent, server peak
//	RSS (VmHWM) 6.07 GB, client_buffers_peak_bytes 2.14 GB; after, 2
//	arrays (240 MB) and 15 -OOM elements, peak RSS 439 MB and 460 MB,
//	budget peak 267.5 MB (under its 268.4 MB).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6391", "server (loopback only)")
	mode := flag.String("mode", "stall", "stall or oom")
	load := flag.Bool("load", false, "create and fill the collection first")
	pid := flag.Int("pid", 0, "server process id, for its RSS (oom)")
	memories := flag.Int("memories", 200_000, "memories in the stall collection")
	elems := flag.Int("elems", 1000, "elements of the FILTER's IN list")
	cmds := flag.Int("cmds", 20, "commands in the transaction")
	disconnect := flag.Bool("disconnect", false, "close the transaction's connection right after EXEC (stall)")
	window := flag.Duration("window", 30*time.Second, "longest the PINGs go on (stall)")
	payloads := flag.Int("payloads", 3, "memories with large payloads (oom)")
	payloadMB := flag.Int("payload-mb", 40, "size of each payload in MB (oom)")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fail(fmt.Errorf("--addr %q: loopback only", *addr))
	}
	switch *mode {
	case "stall":
		err = stall(*addr, *load, *memories, *elems, *cmds, *disconnect, *window)
	case "oom":
		err = oom(*addr, *load, *pid, *payloads, *payloadMB, *cmds)
	default:
		err = fmt.Errorf("--mode %q: want stall or oom", *mode)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "txstall:", err)
	os.Exit(1)
}

// conn is a minimal RESP2 client.
type conn struct {
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, 1<<16), bw: bufio.NewWriterSize(nc, 1<<16)}, nil
}

// send buffers one command.
func (c *conn) send(args ...string) {
	fmt.Fprintf(c.bw, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.bw, "$%d\r\n%s\r\n", len(a), a)
	}
}

// reply is what read keeps of a reply: its kind, a short text (simple
// string, error, integer), the total bytes of bulk strings in it, and its
// elements for an array.
type reply struct {
	kind  byte
	text  string
	bulk  int64
	elems []reply
}

// read reads one reply, discarding bulk strings' contents.
func (c *conn) read() (reply, error) {
	line, err := c.br.ReadString('\n')
	if err != nil {
		return reply{}, err
	}
	if len(line) < 3 {
		return reply{}, fmt.Errorf("short line %q", line)
	}
	r := reply{kind: line[0], text: line[1 : len(line)-2]}
	switch r.kind {
	case '+', '-', ':':
		return r, nil
	case '$':
		n, err := strconv.ParseInt(r.text, 10, 64)
		if err != nil || n < 0 {
			return r, err
		}
		if _, err := io.CopyN(io.Discard, c.br, n+2); err != nil {
			return r, err
		}
		r.bulk = n
		return r, nil
	case '*':
		n, err := strconv.Atoi(r.text)
		if err != nil || n < 0 {
			return r, err
		}
		for i := 0; i < n; i++ {
			e, err := c.read()
			if err != nil {
				return r, err
			}
			r.bulk += e.bulk
			r.elems = append(r.elems, e)
		}
		return r, nil
	}
	return r, fmt.Errorf("bad reply line %q", line)
}

// do sends one command and reads its reply; an error reply is an error.
func (c *conn) do(args ...string) (reply, error) {
	c.send(args...)
	if err := c.bw.Flush(); err != nil {
		return reply{}, err
	}
	r, err := c.read()
	if err == nil && r.kind == '-' {
		err = errors.New(r.text)
	}
	return r, err
}

func stall(addr string, load bool, memories, elems, cmds int, disconnect bool, window time.Duration) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.nc.Close()
	if load {
		if err := loadStall(c, memories); err != nil {
			return err
		}
	}
	in := strings.TrimSuffix(strings.Repeat("1,", elems), ",")
	filter := ".n in [" + in + "]"
	if r, err := c.do("MEM.COUNT", "big", "FILTER", filter); err != nil {
		return fmt.Errorf("MEM.COUNT: %v", err)
	} else {
		fmt.Printf("MEM.COUNT big FILTER '.n in [1 x %d]' = %s\n", elems, r.text)
	}

	// The pinger: one PING every 10 ms until told to stop or the window ends.
	stop := make(chan struct{})
	lat := make(chan []time.Duration, 1)
	p, err := dial(addr)
	if err != nil {
		return err
	}
	defer p.nc.Close()
	go func() {
		var got []time.Duration
		end := time.Now().Add(window)
		defer func() { lat <- got }()
		for time.Now().Before(end) {
			select {
			case <-stop:
				return
			default:
			}
			p.nc.SetDeadline(time.Now().Add(window))
			begin := time.Now()
			if _, err := p.do("PING"); err != nil {
				return
			}
			got = append(got, time.Since(begin))
			time.Sleep(10 * time.Millisecond)
		}
	}()
	time.Sleep(200 * time.Millisecond) // PINGs alone first

	t, err := dial(addr)
	if err != nil {
		return err
	}
	defer t.nc.Close()
	t.send("MULTI")
	for i := 0; i < cmds; i++ {
		t.send("MEM.COUNT", "big", "FILTER", filter)
	}
	t.send("EXEC")
	begin := time.Now()
	if err := t.bw.Flush(); err != nil {
		return err
	}
	var execTook time.Duration
	if disconnect {
		// The server sends +OK and the +QUEUEDs once it has read the whole
		// pipeline (EXEC included); read what comes for half a second,
		// by when the EXEC is running, then close: a socket closed with
		// unread input is reset, and a reset that reached the server
		// before it read the EXEC would drop it.
		t.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		io.Copy(io.Discard, t.br)
		t.nc.Close()
		time.Sleep(min(window, 10*time.Second)) // the PINGs go on meanwhile
	} else {
		t.nc.SetDeadline(time.Now().Add(window))
		for i := 0; i < cmds+1; i++ { // +OK, +QUEUED …
			if _, err := t.read(); err != nil {
				return err
			}
		}
		r, err := t.read()
		if err != nil {
			return fmt.Errorf("EXEC: %v", err)
		}
		execTook = time.Since(begin)
		var errs []string
		for _, e := range r.elems {
			if e.kind == '-' {
				errs = append(errs, e.text)
			}
		}
		fmt.Printf("EXEC of %d MEM.COUNT … FILTER: %v, %d elements, %d errors %v\n",
			cmds, execTook.Round(time.Millisecond), len(r.elems), len(errs), firstOf(errs))
		time.Sleep(300 * time.Millisecond) // PINGs after it
	}
	close(stop)
	got := <-lat
	if len(got) == 0 {
		return errors.New("no PING answered")
	}
	sorted := append([]time.Duration(nil), got...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	fmt.Printf("PING beside it: %d answered, median %v, p99 %v, max %v\n", len(sorted),
		sorted[len(sorted)/2].Round(time.Microsecond), sorted[len(sorted)*99/100].Round(time.Microsecond),
		sorted[len(sorted)-1].Round(time.Millisecond))
	return nil
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// loadStall fills collection big with memories whose attribute n is 0…999.
func loadStall(c *conn, memories int) error {
	c.do("MEM.DROP", "big")
	if _, err := c.do("MEM.CREATE", "big", "DIM", "2"); err != nil {
		return fmt.Errorf("MEM.CREATE: %v", err)
	}
	const batch = 1000
	c.nc.SetDeadline(time.Now().Add(10 * time.Minute))
	for i := 0; i < memories; i += batch {
		args := []string{"MEM.MADD", "big"}
		for j := i; j < min(i+batch, memories); j++ {
			args = append(args, "VALUES", "2", strconv.Itoa(j%97), "1", "ATTRS", `{"n":`+strconv.Itoa(j%1000)+`}`)
		}
		if _, err := c.do(args...); err != nil {
			return fmt.Errorf("MEM.MADD: %v", err)
		}
	}
	c.nc.SetDeadline(time.Time{})
	fmt.Printf("loaded %d memories into big\n", memories)
	return nil
}

func oom(addr string, load bool, pid, payloads, payloadMB, cmds int) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.nc.Close()
	c.nc.SetDeadline(time.Now().Add(5 * time.Minute))
	if load {
		c.do("MEM.DROP", "pay")
		if _, err := c.do("MEM.CREATE", "pay", "DIM", "2"); err != nil {
			return fmt.Errorf("MEM.CREATE: %v", err)
		}
		p := strings.Repeat("p", payloadMB<<20)
		for i := 1; i <= payloads; i++ {
			if _, err := c.do("MEM.ADD", "pay", "VALUES", "2", "1", strconv.Itoa(i), "ID", strconv.Itoa(i), "PAYLOAD", p); err != nil {
				return fmt.Errorf("MEM.ADD: %v", err)
			}
		}
		fmt.Printf("loaded %d payloads of %d MB into pay\n", payloads, payloadMB)
	}
	ids := make([]string, payloads)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	if pid > 0 {
		// Reset the peak RSS, so that VmHWM afterwards is the transaction's.
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			return err
		}
		fmt.Printf("server RSS before: %s\n", status(pid, "VmRSS"))
	}
	c.send("MULTI")
	for i := 0; i < cmds; i++ {
		c.send(append([]string{"MEM.MGET", "pay"}, ids...)...)
	}
	c.send("EXEC")
	begin := time.Now()
	if err := c.bw.Flush(); err != nil {
		return err
	}
	for i := 0; i < cmds+1; i++ {
		if _, err := c.read(); err != nil {
			return err
		}
	}
	r, err := c.read()
	if err != nil {
		return fmt.Errorf("EXEC: %v", err)
	}
	var arrays, ooms int
	var other []string
	for _, e := range r.elems {
		switch {
		case e.kind == '*':
			arrays++
		case e.kind == '-' && strings.HasPrefix(e.text, "OOM"):
			ooms++
		default:
			other = append(other, string(e.kind)+e.text)
		}
	}
	fmt.Printf("EXEC of %d MEM.MGET of %d x %d MB (%d MB asked): %v; %d arrays (%d MB), %d -OOM, other %v\n",
		cmds, payloads, payloadMB, cmds*payloads*payloadMB, time.Since(begin).Round(time.Millisecond),
		arrays, r.bulk>>20, ooms, other)
	if pid > 0 {
		fmt.Printf("server peak RSS during it (VmHWM): %s; RSS after: %s\n", status(pid, "VmHWM"), status(pid, "VmRSS"))
	}
	return nil
}

// status returns a field of /proc/PID/status.
func status(pid int, field string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			return strings.TrimSpace(strings.TrimPrefix(l, field+":"))
		}
	}
	return "?"
}
