package hostile

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config describes one run. Zero durations and counts are not defaulted:
// Main fills them from its flags.
type Config struct {
	Addr     string        // the server; must be loopback (Main checks)
	PID      int           // the server's pid for RSS sampling; 0: none
	Alive    func() bool   // reports whether the server process lives; nil: unknown
	Quiet    time.Duration // honest client alone
	Duration time.Duration // attack phase
	Hostile  int           // hostile goroutines
	Stall    time.Duration // longest a stalling attack holds a connection
	Fill     int           // bytes a bigfill attack sends
	MaxBulk  int64         // longest bulk the server accepts; 0: ask it (CONFIG GET proto-max-bulk-len)
	Pause    time.Duration // pause between one goroutine's attacks
	Kinds    []Kind        // attacks to run; nil: AllKinds
	Memories int           // most memories the honest client keeps
	Alpha    float64       // ALPHA of the honest collection
	Seed     int64
}

// tally counts hostile connections by kind and ending. It is shared by the
// attackers.
type tally struct {
	mu      sync.Mutex // guards the fields below
	ends    [numKinds]map[string]int64
	conns   [numKinds]int64
	sample  [numKinds]map[string][]byte // the first reply seen per ending
	httpRan int64                       // http attacks whose body was run (an +OK among the replies)
}

func newTally() *tally {
	t := &tally{}
	for k := range t.ends {
		t.ends[k] = make(map[string]int64)
		t.sample[k] = make(map[string][]byte)
	}
	return t
}

func (t *tally) add(k Kind, ending string, reply []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ends[k][ending]++
	if ending != endDialFailed {
		t.conns[k]++
	}
	if _, ok := t.sample[k][ending]; !ok && len(reply) > 0 {
		t.sample[k][ending] = reply
	}
	if k == HTTP && (strings.HasPrefix(string(reply), "+OK\r\n") || strings.Contains(string(reply), "\r\n+OK\r\n")) {
		t.httpRan++
	}
}

// latencies of the honest client's commands in one phase.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[int(p*float64(len(l)-1))]
}

// Report is the outcome of Run.
type Report struct {
	Cfg             Config
	Quiet, Attack   latencies // sorted
	Wrong           int64     // honest answers that disagreed with the model
	WrongLog        []string
	HonestErrors    int64 // network errors and timeouts of the honest client
	ErrLog          []string
	Vanished        int64 // times the honest collection had been dropped
	Alive           int   // 1 alive, 0 dead, -1 unknown
	Reconnected     bool  // a fresh connection got PONG after the attack
	ReconnectErr    string
	HostileConns    int64
	Ends            [numKinds]map[string]int64
	Conns           [numKinds]int64
	Samples         [numKinds]map[string][]byte
	HTTPRan         int64
	RSSStart        int64 // VmRSS when the attack began, KiB; -1 unknown
	RSSPeakSampled  int64 // largest VmRSS sampled during the attack, KiB
	RSSEnd          int64 // VmRSS after the attack, KiB
	HWM             int64 // VmHWM after the attack, KiB (peak since the server started)
	FinalCount      int   // memories in the model at the end
	FinalSweepWrong int64 // wrong answers in the final re-read (included in Wrong)
}

// OK reports whether no honest answer was wrong and the server survived.
func (r *Report) OK() bool { return r.Wrong == 0 && r.Alive != 0 && r.Reconnected }

// Run runs the quiet phase and the attack phase against cfg.Addr and
// returns the report. It returns an error only if the run could not start
// (the honest collection could not be created).
func Run(cfg Config) (*Report, error) {
	if len(cfg.Kinds) == 0 {
		cfg.Kinds = AllKinds
	}
	ctx := context.Background()
	h := newHonest(cfg.Addr, cfg.Seed, cfg.Alpha, cfg.Memories)
	defer h.close()
	if err := h.create(ctx); err != nil {
		return nil, fmt.Errorf("hostile: creating the honest collection on %s: %w", cfg.Addr, err)
	}
	if cfg.MaxBulk <= 0 {
		cfg.MaxBulk = 64 << 20 // the server's default, if it will not say
		if kv, err := h.rdb.ConfigGet(ctx, "proto-max-bulk-len").Result(); err == nil {
			if n, err := strconv.ParseInt(kv["proto-max-bulk-len"], 10, 64); err == nil && n > 0 {
				cfg.MaxBulk = n
			}
		}
	}
	rep := &Report{Cfg: cfg, Alive: -1, RSSStart: -1, RSSPeakSampled: -1, RSSEnd: -1, HWM: -1}

	start := time.Now()
	attackStart := start.Add(cfg.Quiet)
	end := attackStart.Add(cfg.Duration)

	// The honest client runs through both phases.
	for time.Now().Before(attackStart) {
		t0 := time.Now()
		h.step(ctx)
		rep.Quiet = append(rep.Quiet, time.Since(t0))
	}

	if cfg.PID > 0 {
		rep.RSSStart, _ = readStatus(cfg.PID, "VmRSS")
	}
	t := newTally()
	var wg sync.WaitGroup
	for i := 0; i < cfg.Hostile; i++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			a := &attacker{addr: cfg.Addr, end: end, stall: cfg.Stall, fill: cfg.Fill, maxBulk: cfg.MaxBulk,
				rng: rand.New(rand.NewSource(seed)), tally: t}
			for time.Now().Before(end) {
				a.run(cfg.Kinds[a.rng.Intn(len(cfg.Kinds))])
				if cfg.Pause > 0 {
					time.Sleep(time.Duration(a.rng.Int63n(int64(cfg.Pause) + 1)))
				}
			}
		}(cfg.Seed*1000003 + int64(i) + 1)
	}
	stopSampling := make(chan struct{})
	sampled := make(chan int64, 1)
	go func() {
		peak := int64(-1)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if cfg.PID > 0 {
				if v, err := readStatus(cfg.PID, "VmRSS"); err == nil && v > peak {
					peak = v
				}
			}
			select {
			case <-stopSampling:
				sampled <- peak
				return
			case <-tick.C:
			}
		}
	}()

	for time.Now().Before(end) {
		t0 := time.Now()
		h.step(ctx)
		rep.Attack = append(rep.Attack, time.Since(t0))
	}
	wg.Wait()
	close(stopSampling)
	rep.RSSPeakSampled = <-sampled

	// Did the server survive? A fresh connection must answer PING, and the
	// process (if we know it) must live.
	fresh := redis.NewClient(&redis.Options{Addr: cfg.Addr, Protocol: 2, MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second})
	if pong, err := fresh.Ping(ctx).Result(); err == nil && pong == "PONG" {
		rep.Reconnected = true
	} else {
		rep.ReconnectErr = fmt.Sprintf("%q %v", pong, err)
	}
	fresh.Close()
	if cfg.Alive != nil {
		rep.Alive = 0
		if cfg.Alive() {
			rep.Alive = 1
		}
	}
	if rep.Reconnected {
		// The last command may have failed on the network: settle it,
		// then re-read everything.
		if h.resync != nil {
			h.step(ctx)
		}
		before := h.wrong
		h.sweep(ctx)
		rep.FinalSweepWrong = h.wrong - before
	}
	if cfg.PID > 0 {
		rep.RSSEnd, _ = readStatus(cfg.PID, "VmRSS")
		rep.HWM, _ = readStatus(cfg.PID, "VmHWM")
	}

	sort.Slice(rep.Quiet, func(i, j int) bool { return rep.Quiet[i] < rep.Quiet[j] })
	sort.Slice(rep.Attack, func(i, j int) bool { return rep.Attack[i] < rep.Attack[j] })
	rep.Wrong, rep.WrongLog = h.wrong, h.wrongLog
	rep.HonestErrors, rep.ErrLog = h.errs, h.errLog
	rep.Vanished = h.vanished
	rep.FinalCount = len(h.ids)
	t.mu.Lock()
	rep.Ends, rep.Conns, rep.Samples, rep.HTTPRan = t.ends, t.conns, t.sample, t.httpRan
	t.mu.Unlock()
	for _, n := range rep.Conns {
		rep.HostileConns += n
	}
	return rep, nil
}

// readStatus returns the value in KiB of field (VmRSS, VmHWM) of
// /proc/pid/status.
func readStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			fs := strings.Fields(rest)
			if len(fs) == 0 {
				break
			}
			return strconv.ParseInt(fs[0], 10, 64)
		}
	}
	return -1, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}
