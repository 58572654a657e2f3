// Command fairflood measures, from outside a running `memrl serve`, what
// one user flooding the server with searches costs another user's
// retrievals, and whether one user can take every connection:
//
//	flood: a victim user sends MEM.RETRIEVE (K1 -victim-k1) back to back
//	       on one connection for -duration, first alone, then while an
//	       attacker user (read-only is enough) loops on the largest
//	       MEM.MRETRIEVE (1,024 queries, K1 -attack-k1) from each count of
//	       connections in -conns; the report gives the victim's p50, p99
//	       and max, and the attacker's queries answered a second.
//	conns: the attacker opens up to -attack-conns connections and
//	       authenticates each; then the victim tries to connect. The
//	       report gives how many the attacker got, the first refusal, and
//	       the victim's answer.
//
// It talks to loopback only, and every loop is bounded in count and time.
//
//	memrl serve --dir D --addr 127.0.0.1:6393 --sync none --users-file U --maxclients 200
//	  (U: "default:adminpw:readwrite", "victim:vpw:readonly", "attacker:apw:readonly")
//	go run ./bench/fairflood -addr 127.0.0.1:6393 -load -base ../shared/data/sift1m-deb/base.bvecs
//	go run ./bench/fairflood -addr 127.0.0.1:6393 -mode flood -conns 0,1,8,64
//	go run ./bench/fairflood -addr 127.0.0.1:6393 -mode conns -attack-conns 250
//
// Figures: docs/BENCHMARKS.md "Many agents on one server".
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type flags struct {
	addr                    string
	coll                    string
	mode                    string
	load                    bool
	n, dim                  int
	base, query             string
	adminUser, adminPass    string
	victimUser, victimPass  string
	attackUser, attackPass  string
	conns                   []int
	duration, warmup        time.Duration
	victimK1, attackK1      int
	attackQueries, attackK2 int
	attackRetrieve          bool
	attackConns             int
	maxVictim               int
}

func main() {
	var f flags
	flag.StringVar(&f.addr, "addr", "127.0.0.1:6393", "server (loopback only)")
	flag.StringVar(&f.coll, "coll", "fair", "collection")
	flag.StringVar(&f.mode, "mode", "flood", "flood, conns, or none (with -load: load only)")
	flag.BoolVar(&f.load, "load", false, "create and fill the collection first (as -admin-user), and wait for its index")
	flag.IntVar(&f.n, "n", 100_000, "memories to load")
	flag.IntVar(&f.dim, "dim", 128, "dimension of random vectors (without -base)")
	flag.StringVar(&f.base, "base", "", "SIFT base.bvecs to load (default: random vectors)")
	flag.StringVar(&f.query, "query", "", "SIFT query.bvecs for the queries (default: random, or the base's rows)")
	flag.StringVar(&f.adminUser, "admin-user", "default", "user that loads")
	flag.StringVar(&f.adminPass, "admin-pass", "adminpw", "its password (empty: no AUTH)")
	flag.StringVar(&f.victimUser, "victim-user", "victim", "the victim's user")
	flag.StringVar(&f.victimPass, "victim-pass", "vpw", "its password (empty: no AUTH)")
	flag.StringVar(&f.attackUser, "attack-user", "attacker", "the attacker's user")
	flag.StringVar(&f.attackPass, "attack-pass", "apw", "its password (empty: no AUTH)")
	conns := flag.String("conns", "0,1,8,64", "attacker connection counts, one phase each (0: the victim alone)")
	flag.DurationVar(&f.duration, "duration", 10*time.Second, "length of each flood phase")
	flag.DurationVar(&f.warmup, "warmup", time.Second, "attack before the victim's measurement starts")
	flag.IntVar(&f.victimK1, "victim-k1", 10, "the victim's K1 (K2 5)")
	flag.IntVar(&f.attackK1, "attack-k1", 1000, "the attacker's K1")
	flag.IntVar(&f.attackK2, "attack-k2", 10, "the attacker's K2")
	flag.IntVar(&f.attackQueries, "attack-queries", 1024, "queries in each attacker MEM.MRETRIEVE")
	flag.BoolVar(&f.attackRetrieve, "attack-retrieve", false, "attack with MEM.RETRIEVE (K1 -attack-k1) instead of MEM.MRETRIEVE")
	flag.IntVar(&f.attackConns, "attack-conns", 250, "connections the attacker tries to open (conns)")
	flag.IntVar(&f.maxVictim, "max-victim", 200_000, "most victim retrievals in a phase")
	flag.Parse()
	host, _, err := net.SplitHostPort(f.addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fail(fmt.Errorf("-addr %q: loopback only", f.addr))
	}
	for _, s := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 || n > 4096 {
			fail(fmt.Errorf("-conns %q: want counts 0..4096", *conns))
		}
		f.conns = append(f.conns, n)
	}
	if f.duration <= 0 || f.duration > 10*time.Minute {
		fail(errors.New("-duration: want (0, 10m]"))
	}
	qs, err := f.loadOrQueries()
	if err != nil {
		fail(err)
	}
	switch f.mode {
	case "flood":
		err = flood(&f, qs)
	case "conns":
		err = connsTest(&f)
	case "none":
	default:
		err = fmt.Errorf("-mode %q: want flood, conns or none", f.mode)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fairflood:", err)
	os.Exit(1)
}

// loadOrQueries loads the collection if asked, and returns the query
// vectors (at least -attack-queries of them).
func (f *flags) loadOrQueries() ([][]float32, error) {
	var base [][]float32
	var err error
	if f.load {
		if f.base != "" {
			if base, err = readBvecs(f.base, f.n); err != nil {
				return nil, err
			}
		} else {
			base = randomVecs(rand.New(rand.NewPCG(1, 2)), f.n, f.dim)
		}
		if err := f.loadColl(base); err != nil {
			return nil, err
		}
	}
	nq := max(f.attackQueries, 1024)
	if f.query != "" {
		return readBvecs(f.query, nq)
	}
	c, err := dialAuth(f.addr, f.adminUser, f.adminPass)
	if err != nil {
		return nil, err
	}
	defer c.nc.Close()
	r, err := c.do("MEM.INFO", f.coll)
	if err != nil {
		return nil, fmt.Errorf("MEM.INFO %s: %v", f.coll, err)
	}
	dim := f.dim
	for i := 0; i+1 < len(r.elems); i += 2 {
		if r.elems[i].text == "dim" {
			dim, _ = strconv.Atoi(r.elems[i+1].text)
		}
	}
	return randomVecs(rand.New(rand.NewPCG(3, 4)), nq, dim), nil
}

// loadColl creates the collection and fills it, then waits until its
// IVF-PQ index is built.
func (f *flags) loadColl(base [][]float32) error {
	c, err := dialAuth(f.addr, f.adminUser, f.adminPass)
	if err != nil {
		return err
	}
	defer c.nc.Close()
	c.nc.SetDeadline(time.Now().Add(30 * time.Minute))
	c.do("MEM.DROP", f.coll)
	if _, err := c.do("MEM.CREATE", f.coll, "DIM", strconv.Itoa(len(base[0])), "METRIC", "L2"); err != nil {
		return fmt.Errorf("MEM.CREATE: %v", err)
	}
	const batch = 1000
	begin := time.Now()
	for i := 0; i < len(base); i += batch {
		args := []string{"MEM.MADD", f.coll}
		for _, v := range base[i:min(i+batch, len(base))] {
			args = append(args, "FP32", string(blob(v)))
		}
		if _, err := c.do(args...); err != nil {
			return fmt.Errorf("MEM.MADD: %v", err)
		}
	}
	fmt.Printf("loaded %d memories of %d dimensions into %s in %v\n", len(base), len(base[0]), f.coll, time.Since(begin).Round(time.Millisecond))
	for deadline := time.Now().Add(20 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		r, err := c.do("MEM.INFO", f.coll)
		if err != nil {
			return err
		}
		for i := 0; i+1 < len(r.elems); i += 2 {
			if r.elems[i].text == "index" && strings.HasPrefix(r.elems[i+1].text, "ivfpq") && !strings.Contains(r.elems[i+1].text, "(") {
				fmt.Printf("index: %s (%v after the load)\n", r.elems[i+1].text, time.Since(begin).Round(time.Second))
				_, err := c.do("MEM.CHECKPOINT")
				return err
			}
		}
	}
	return errors.New("the index was not built in 20 minutes")
}

// flood runs one phase per attacker connection count. The attacker's
// queries a second are those its commands answered over its whole run,
// from its start to the end of the last command it sent.
func flood(f *flags, qs [][]float32) error {
	victimCmd := func(i int) []string {
		return []string{"MEM.RETRIEVE", f.coll, "FP32", string(blob(qs[i%len(qs)])), "K1", strconv.Itoa(f.victimK1), "K2", "5"}
	}
	var attackCmd []byte
	if f.attackRetrieve {
		attackCmd = encode([]string{"MEM.RETRIEVE", f.coll, "FP32", string(blob(qs[0])), "K1", strconv.Itoa(f.attackK1), "K2", strconv.Itoa(f.attackK2)})
	} else {
		args := []string{"MEM.MRETRIEVE", f.coll, "K1", strconv.Itoa(f.attackK1), "K2", strconv.Itoa(f.attackK2), "QUERIES", strconv.Itoa(f.attackQueries)}
		for _, q := range qs[:f.attackQueries] {
			args = append(args, "FP32", string(blob(q)))
		}
		attackCmd = encode(args)
	}
	perCmd := f.attackQueries
	what := fmt.Sprintf("MEM.MRETRIEVE of %d queries K1 %d K2 %d", f.attackQueries, f.attackK1, f.attackK2)
	if f.attackRetrieve {
		perCmd = 1
		what = fmt.Sprintf("MEM.RETRIEVE K1 %d K2 %d", f.attackK1, f.attackK2)
	}
	fmt.Printf("victim %q: MEM.RETRIEVE K1 %d K2 5, one connection, back to back, %v a phase; attacker %q: %s on each connection\n",
		f.victimUser, f.victimK1, f.duration, f.attackUser, what)
	fmt.Printf("| attacker conns | victim retrievals | victim p50 | victim p99 | victim max | victim errors | attacker queries/s | attacker errors | admissions waited |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range f.conns {
		var stop atomic.Bool
		var answered, errs atomic.Int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		end := time.Now().Add(f.warmup + f.duration + 30*time.Second) // hard bound
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := dialAuth(f.addr, f.attackUser, f.attackPass)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					return
				}
				defer c.nc.Close()
				c.nc.SetDeadline(end)
				for !stop.Load() && time.Now().Before(end) {
					if _, err := c.nc.Write(attackCmd); err != nil {
						return
					}
					r, err := c.read()
					if err != nil {
						return
					}
					if r.kind == '-' {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, r.text)
						continue
					}
					answered.Add(int64(perCmd))
				}
			}()
		}
		waitedBefore := infoStat(f, "search_admissions_waited")
		attackStart := time.Now()
		time.Sleep(f.warmup)
		v, err := dialAuth(f.addr, f.victimUser, f.victimPass)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			return fmt.Errorf("victim: %v", err)
		}
		var lat []time.Duration
		var verrs int
		var vfirst string
		begin := time.Now()
		v.nc.SetDeadline(end)
		for i := 0; time.Since(begin) < f.duration && i < f.maxVictim; i++ {
			t := time.Now()
			r, err := v.do(victimCmd(i)...)
			d := time.Since(t)
			if err != nil {
				verrs++
				if vfirst == "" {
					vfirst = err.Error()
				}
				if r.kind != '-' {
					break // the connection failed
				}
				continue
			}
			lat = append(lat, d)
		}
		v.nc.Close()
		stop.Store(true)
		wg.Wait() // each attacker connection finishes its command
		attackTook := time.Since(attackStart)
		waited := infoStat(f, "search_admissions_waited")
		wstr := "n/a"
		if waited >= 0 && waitedBefore >= 0 {
			wstr = strconv.FormatInt(waited-waitedBefore, 10)
		}
		slices.Sort(lat)
		aerr := strconv.FormatInt(errs.Load(), 10)
		if s, ok := firstErr.Load().(string); ok {
			aerr += " (" + truncate(s, 60) + ")"
		}
		verr := strconv.Itoa(verrs)
		if vfirst != "" {
			verr += " (" + truncate(vfirst, 60) + ")"
		}
		fmt.Printf("| %d | %d | %s | %s | %s | %s | %.0f | %s | %s |\n", n, len(lat), pct(lat, 0.50), pct(lat, 0.99), pct(lat, 1),
			verr, float64(answered.Load())/attackTook.Seconds(), aerr, wstr)
	}
	return nil
}

// connsTest has the attacker open connections until refused (or
// -attack-conns), then has the victim connect.
func connsTest(f *flags) error {
	var held []*conn
	defer func() {
		for _, c := range held {
			c.nc.Close()
		}
	}()
	refusal := ""
	for i := 0; i < f.attackConns; i++ {
		c, err := dialAuth(f.addr, f.attackUser, f.attackPass)
		if err != nil {
			refusal = err.Error()
			break
		}
		held = append(held, c)
	}
	fmt.Printf("attacker %q: %d connections authenticated of %d tried; refusal: %q\n", f.attackUser, len(held), f.attackConns, refusal)
	v, err := dialAuth(f.addr, f.victimUser, f.victimPass)
	if err != nil {
		fmt.Printf("victim %q while they are held: refused: %v\n", f.victimUser, err)
		return nil
	}
	defer v.nc.Close()
	r, err := v.do("PING")
	fmt.Printf("victim %q while they are held: PING -> %s %v\n", f.victimUser, r.text, errOrNil(err))
	return nil
}

func errOrNil(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// infoStat returns an integer field of INFO stats, or -1.
func infoStat(f *flags, field string) int64 {
	c, err := dialAuth(f.addr, f.adminUser, f.adminPass)
	if err != nil {
		return -1
	}
	defer c.nc.Close()
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	r, err := c.do("INFO", "stats")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(r.text, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

func pct(sorted []time.Duration, p float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	i := min(len(sorted)-1, int(math.Ceil(p*float64(len(sorted))))-1)
	d := sorted[max(0, i)]
	return fmt.Sprintf("%.2f ms", float64(d)/1e6)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func blob(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func randomVecs(r *rand.Rand, n, dim int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = r.Float32()
		}
		out[i] = v
	}
	return out
}

// readBvecs reads the first n vectors of a TEXMEX .bvecs file.
func readBvecs(path string, n int) ([][]float32, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 1<<20)
	var out [][]float32
	var hdr [4]byte
	for len(out) < n {
		if _, err := io.ReadFull(br, hdr[:]); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		d := int(binary.LittleEndian.Uint32(hdr[:]))
		if d <= 0 || d > 65536 {
			return nil, fmt.Errorf("%s: bad dimension %d", path, d)
		}
		b := make([]byte, d)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		v := make([]float32, d)
		for i, x := range b {
			v[i] = float32(x)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no vectors", path)
	}
	return out, nil
}

// conn is a minimal RESP2 client.
type conn struct {
	nc net.Conn
	br *bufio.Reader
}

// dialAuth connects and, if pass is not empty, authenticates as user.
func dialAuth(addr, user, pass string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, br: bufio.NewReaderSize(nc, 1<<16)}
	if pass == "" {
		return c, nil
	}
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.do("AUTH", user, pass); err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

func encode(args []string) []byte {
	var b []byte
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n", len(a))
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// reply is what read keeps of a reply: its kind, its text (simple
// string, error, integer, bulk string), and its elements for an array.
type reply struct {
	kind  byte
	text  string
	elems []reply
}

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
		n, err := strconv.Atoi(r.text)
		if err != nil || n < 0 {
			return r, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.br, b); err != nil {
			return r, err
		}
		r.text = string(b[:n])
		return r, nil
	case '*':
		n, err := strconv.Atoi(r.text)
		if err != nil || n < 0 {
			return r, err
		}
		r.elems = make([]reply, 0, n)
		for i := 0; i < n; i++ {
			e, err := c.read()
			if err != nil {
				return r, err
			}
			r.elems = append(r.elems, e)
		}
		return r, nil
	}
	return r, fmt.Errorf("bad reply line %q", line)
}

// do sends one command and reads its reply; an error reply is an error.
func (c *conn) do(args ...string) (reply, error) {
	if _, err := c.nc.Write(encode(args)); err != nil {
		return reply{}, err
	}
	r, err := c.read()
	if err == nil && r.kind == '-' {
		err = errors.New(r.text)
	}
	return r, err
}
