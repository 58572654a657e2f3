package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/internal/linearize"
	"github.com/redis/go-redis/v9"
)

// The fault test between real processes: a shard of three `memrl serve`
// processes, clients rewarding and reading a few memories through
// whichever node leads, and a nemesis that SIGKILLs, SIGSTOPs, restarts
// and (as root with nft) partitions the nodes. At the end the history must
// be linearizable (linearize.MemModel), every acknowledged reward must be
// counted in the final visits, and the replicas must agree.
//
// Short by default (one round of each fault, about half a minute);
// MEMRL_FAULT_ROUNDS=N runs N rounds of each (docs/CLUSTER.md, "Tested").

// memoriesPerRound is how many memories the clients reward and read per
// round of faults: spreading a longer history over more memories keeps
// each memory's history (porcupine's partition, whose check time grows
// fast with its operations of unknown outcome) about as short as in one
// round.
const memoriesPerRound = 32

// faultNode is one `memrl serve` process of the shard, restarted with the
// same arguments after a SIGKILL.
type faultNode struct {
	id, addr string
	raftPort int
	dir      string
	uid      int // run as this uid when non-zero (the partition's rules match it)
	logf     *os.File
	status   *redis.Client // short timeouts: a stopped node must not hold the test up

	mu      sync.Mutex // guards cmd, done, stopped, dead
	cmd     *exec.Cmd
	done    chan struct{} // closed once cmd has exited
	stopped bool          // SIGSTOPped
	dead    bool          // SIGKILLed and not restarted
}

// up reports whether the node runs and is not stopped.
func (n *faultNode) up() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && !n.stopped && !n.dead
}

// faultShard is the shard under test.
type faultShard struct {
	t         *testing.T
	bin       string
	nodesPath string
	nodes     []*faultNode
	leader    atomic.Pointer[faultNode] // the last node seen leading (the clients' target)
	uids      bool                      // each node runs as its own uid
}

// othersReach reports whether every directory from dir up to / lets other
// users through (o+x).
func othersReach(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// startFaultShard starts three nodes of one shard, each as its own uid
// when partitions are possible (asUIDs), and a watcher that keeps
// s.leader current until the test ends.
func startFaultShard(t *testing.T, asUIDs bool) *faultShard {
	t.Helper()
	bin := clusterBin(t)
	dir := t.TempDir()
	s := &faultShard{t: t, bin: bin, nodesPath: filepath.Join(dir, "nodes.tsv")}
	if asUIDs {
		// The nodes run as other uids: they must reach the binary, the
		// nodes file and their directories.
		for _, d := range []string{filepath.Dir(bin), dir, filepath.Dir(dir)} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if !othersReach(filepath.Dir(bin)) || !othersReach(dir) {
			t.Logf("%s or %s is closed to other users: the nodes run as this user", bin, dir)
			asUIDs = false
		}
	}
	s.uids = asUIDs
	port := freePortRange(t, 3)
	lines := "# memrl nodes v1\n"
	for i := 0; i < 3; i++ {
		n := &faultNode{id: fmt.Sprintf("n%d", i+1), addr: "127.0.0.1:" + strconv.Itoa(port+i),
			raftPort: port + i + cluster.RaftPortOffset, dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1))}
		if asUIDs {
			n.uid = 61000 + os.Getpid()%1000*3 + i
		}
		lines += fmt.Sprintf("%s\t%s\t0\t0\n", n.id, n.addr)
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if n.uid != 0 {
			if err := os.Chown(n.dir, n.uid, n.uid); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Create(filepath.Join(dir, n.id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		n.logf = f
		n.status = redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1, PoolSize: 2,
			DialTimeout: 300 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
		s.nodes = append(s.nodes, n)
		t.Cleanup(func() {
			n.mu.Lock()
			cmd, done := n.cmd, n.done
			n.mu.Unlock()
			if cmd != nil {
				cmd.Process.Kill() // SIGKILL ends a stopped process too
				<-done
			}
			n.status.Close()
			f.Close()
		})
	}
	if err := os.WriteFile(s.nodesPath, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range s.nodes {
		s.start(n)
	}
	stop := make(chan struct{})
	watched := make(chan struct{})
	t.Cleanup(func() { close(stop); <-watched })
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if l := s.findLeader(nil); l != nil {
				s.leader.Store(l)
			}
		}
	}()
	return s
}

// start runs n's process and waits until it answers PING.
func (s *faultShard) start(n *faultNode) {
	t := s.t
	t.Helper()
	cmd := exec.Command(s.bin, "serve", "--dir", n.dir, "--cluster-nodes", s.nodesPath, "--node-id", n.id)
	cmd.Stdout, cmd.Stderr = n.logf, n.logf
	if n.uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(n.uid), Gid: uint32(n.uid)}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	n.mu.Lock()
	n.cmd, n.done, n.stopped, n.dead = cmd, done, false, false
	n.mu.Unlock()
	s.waitFor(n.id+" to answer PING", 30*time.Second, func() bool {
		select {
		case <-done:
			log, _ := os.ReadFile(n.logf.Name())
			t.Fatalf("%s exited:\n%s", n.id, log)
		default:
		}
		return n.status.Ping(context.Background()).Err() == nil
	})
}

// kill sends SIGKILL to n and waits for it to exit.
func (s *faultShard) kill(n *faultNode) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.dead = true
	n.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	<-done
}

// signal sends SIGSTOP or SIGCONT to n.
func (s *faultShard) signal(n *faultNode, sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
	n.stopped = sig == syscall.SIGSTOP
}

// findLeader returns a running node other than except that says it
// leads, or nil.
func (s *faultShard) findLeader(except *faultNode) *faultNode {
	for _, n := range s.nodes {
		if n != except && n.up() && raftStatus(n.status)["role"] == "leader" {
			return n
		}
	}
	return nil
}

// waitFor polls f until it holds, failing the test after d.
func (s *faultShard) waitFor(what string, d time.Duration, f func() bool) {
	s.t.Helper()
	for deadline := time.Now().Add(d); !f(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// waitLeader waits for a node other than except to lead and returns it.
func (s *faultShard) waitLeader(except *faultNode) *faultNode {
	s.t.Helper()
	var l *faultNode
	s.waitFor("a leader", 30*time.Second, func() bool { l = s.findLeader(except); return l != nil })
	return l
}

// waitCaughtUp waits until n has applied what the leader had committed
// when it was called.
func (s *faultShard) waitCaughtUp(n *faultNode) {
	s.t.Helper()
	l := s.waitLeader(nil)
	commit, _ := strconv.ParseUint(raftStatus(l.status)["raft_commit_index"], 10, 64)
	s.waitFor(n.id+" to catch up", 30*time.Second, func() bool {
		applied, err := strconv.ParseUint(raftStatus(n.status)["applied_index"], 10, 64)
		return err == nil && applied >= commit
	})
}

// faultClients rewards and reads memories 1..memories through the
// shard's leader, recording the history.
type faultClients struct {
	start time.Time
	mu    sync.Mutex // guards history, acked and tried
	// history holds every read that answered and every reward, with an
	// unknown outcome when it was not refused (TRYAGAIN, CLUSTERDOWN,
	// MOVED, LOADING: not applied) and did not answer.
	history      []porcupine.Operation
	memories     int
	acked, tried []int64 // by memory id
	ops, unknown atomic.Int64
	ackCount     atomic.Int64 // acknowledged rewards
}

// refused reports whether err says the command was not applied.
func refused(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "MOVED", "LOADING", "NOAUTH"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// run starts n clients until stop is closed; the returned channel is
// closed once they have all returned.
func (w *faultClients) run(s *faultShard, n int, stop chan struct{}) chan struct{} {
	ctx := context.Background()
	var wg sync.WaitGroup
	for c := 0; c < n; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(c)))
			conns := map[*faultNode]*redis.Client{}
			defer func() {
				for _, rdb := range conns {
					rdb.Close()
				}
			}()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				at := s.leader.Load()
				if at == nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				rdb := conns[at]
				if rdb == nil {
					// Per-operation timeouts: a stopped leader makes the
					// operation's outcome unknown after 2 s.
					rdb = redis.NewClient(&redis.Options{Addr: at.addr, MaxRetries: -1, PoolSize: 1,
						DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
					conns[at] = rdb
				}
				id := uint64(1 + rng.Intn(w.memories))
				var in linearize.Input
				var out linearize.Output
				call := time.Since(w.start).Nanoseconds()
				var err error
				if rng.Intn(2) == 0 {
					in = linearize.Input{ID: id, R: float64(c*10_000_000 + seq + 1)}
					var v []any
					if v, err = rdb.Do(ctx, "MEM.REWARD", "k", in.R, id).Slice(); err == nil {
						out.Q, _ = strconv.ParseFloat(fmt.Sprint(v[0]), 64)
					}
				} else {
					in = linearize.Input{Read: true, ID: id}
					out, err = memGet(ctx, rdb, id)
				}
				ret := time.Since(w.start).Nanoseconds()
				w.ops.Add(1)
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					if refused(err) || in.Read {
						continue // not applied, or a read that saw nothing
					}
					// A reward with no answer: it may take effect any time
					// later. Drop the connection, which may be stuck.
					rdb.Close()
					delete(conns, at)
					out, ret = linearize.Output{Unknown: true}, linearize.Never
					w.unknown.Add(1)
				}
				w.mu.Lock()
				if !in.Read {
					w.tried[id]++
					if !out.Unknown {
						w.acked[id]++
						w.ackCount.Add(1)
					}
				}
				w.history = append(w.history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				w.mu.Unlock()
			}
		}(c)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// memGet reads memory id's Q and visits.
func memGet(ctx context.Context, rdb *redis.Client, id uint64) (linearize.Output, error) {
	var out linearize.Output
	v, err := rdb.Do(ctx, "MEM.GET", "k", id).Slice()
	if err != nil {
		return out, err
	}
	for j := 0; j+1 < len(v); j += 2 {
		switch v[j] {
		case "q":
			out.Q, _ = strconv.ParseFloat(fmt.Sprint(v[j+1]), 64)
		case "visits":
			out.Visits, _ = v[j+1].(int64)
		}
	}
	return out, nil
}

// quietDials is go-redis's logger without its failed-dial lines, which a
// killed node makes by the hundred.
type quietDials struct{}

func (quietDials) Printf(_ context.Context, format string, v ...any) {
	if msg := fmt.Sprintf(format, v...); !strings.Contains(msg, "failed to dial") && !strings.Contains(msg, "connection refused") {
		log.Print("redis: " + msg)
	}
}

// faultRounds is how many rounds of each fault to run: 1, or
// MEMRL_FAULT_ROUNDS.
func faultRounds(t *testing.T) int {
	v := os.Getenv("MEMRL_FAULT_ROUNDS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("MEMRL_FAULT_ROUNDS=%q: want a positive count", v)
	}
	return n
}

// TestFaultProcesses: 6 clients reward and read through the leader of a
// 1 × 3 shard of real processes while a nemesis, round after round,
// SIGKILLs the leader and restarts it, SIGKILLs a follower and restarts
// it, SIGSTOPs the leader for 2 s, SIGSTOPs a follower for 2 s, and (as
// root with nft) cuts the leader's raft traffic for 2 s. After each fault
// the shard must acknowledge writes again. At the end: the history is
// linearizable, every acknowledged reward is counted in the final
// visits, and the replicas hold the same memories.
func TestFaultProcesses(t *testing.T) {
	rounds := faultRounds(t)
	memories := memoriesPerRound * rounds
	// Clients meet refused dials by design here (killed nodes).
	redis.SetLogger(quietDials{})
	nft := newNftPartition(t)
	s := startFaultShard(t, nft != nil)
	if !s.uids {
		nft = nil
	}
	ctx := context.Background()
	l := s.waitLeader(nil)
	if err := l.status.Do(ctx, "MEM.CREATE", "k", "DIM", 2, "ALPHA", 1, "GAMMA", 0, "QINIT", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= memories; id++ {
		if err := l.status.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, float64(id), "ID", id).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s.leader.Store(l)
	w := &faultClients{start: time.Now(), memories: memories,
		acked: make([]int64, memories+1), tried: make([]int64, memories+1)}
	stop := make(chan struct{})
	clientsDone := w.run(s, 6, stop)
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			<-clientsDone
		}
	}()
	progress := func(after string) {
		t.Helper()
		base := w.ackCount.Load()
		s.waitFor("an acknowledged reward after "+after, 30*time.Second, func() bool { return w.ackCount.Load() > base+5 })
	}
	progress("the start")

	type fault struct {
		name   string
		leader bool // the victim is the leader, else a follower
		do     func(n *faultNode)
		heal   func(n *faultNode)
	}
	const pause = 2 * time.Second // how long a stop or partition lasts
	faults := []fault{
		{"SIGKILL leader, restart", true, s.kill, s.start},
		{"SIGKILL follower, restart", false, s.kill, s.start},
		{"SIGSTOP leader 2s, SIGCONT", true,
			func(n *faultNode) { s.signal(n, syscall.SIGSTOP) },
			func(n *faultNode) { time.Sleep(pause); s.signal(n, syscall.SIGCONT) }},
		{"SIGSTOP follower 2s, SIGCONT", false,
			func(n *faultNode) { s.signal(n, syscall.SIGSTOP) },
			func(n *faultNode) { time.Sleep(pause); s.signal(n, syscall.SIGCONT) }},
	}
	if nft != nil {
		faults = append(faults, fault{"nftables partition of the leader's raft port 2s", true,
			func(n *faultNode) { nft.isolate(n, s.nodes) },
			func(n *faultNode) { time.Sleep(pause); nft.heal() }})
	} else {
		t.Log("partition nemesis skipped: needs root, nft, and directories other uids can reach")
	}
	ran := map[string]int{}
	for r := 0; r < rounds; r++ {
		for _, f := range faults {
			leader := s.waitLeader(nil)
			victim := leader
			if !f.leader {
				for _, n := range s.nodes {
					if n != leader {
						victim = n
						break
					}
				}
			}
			began := time.Now()
			f.do(victim)
			if f.leader {
				next := s.waitLeader(victim)
				s.leader.Store(next)
			}
			progress(f.name)
			recovered := time.Since(began)
			f.heal(victim)
			s.waitCaughtUp(victim)
			progress("healing " + f.name)
			ran[f.name]++
			t.Logf("round %d: %s (%s): writes acknowledged again after %v; healed and caught up after %v",
				r+1, f.name, victim.id, recovered.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		}
	}
	close(stop)
	<-clientsDone
	stopped = true

	// Every node caught up and identical; the final reads join the history.
	s.waitFor("every replica to apply the whole log", 60*time.Second, func() bool {
		var first string
		for i, n := range s.nodes {
			st := raftStatus(n.status)
			if st == nil || st["applied_index"] != st["raft_last_log_index"] {
				return false
			}
			if i == 0 {
				first = st["applied_index"]
			} else if st["applied_index"] != first {
				return false
			}
		}
		return true
	})
	final := s.waitLeader(nil)
	for id := uint64(1); id <= uint64(memories); id++ {
		call := time.Since(w.start).Nanoseconds()
		out, err := memGet(ctx, final.status, id)
		if err != nil {
			t.Fatalf("final read of %d from leader %s: %v", id, final.id, err)
		}
		w.history = append(w.history, porcupine.Operation{ClientId: 1000, Input: linearize.Input{Read: true, ID: id},
			Call: call, Output: out, Return: time.Since(w.start).Nanoseconds()})
		if out.Visits < w.acked[id] || out.Visits > w.tried[id] {
			t.Fatalf("memory %d has %d visits; %d rewards acknowledged, %d sent", id, out.Visits, w.acked[id], w.tried[id])
		}
		for _, n := range s.nodes {
			// READONLY: each node's own copy, not the leader's via MOVED.
			ro := redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1, PoolSize: 1,
				OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "READONLY").Err() }})
			got, err := memGet(ctx, ro, id)
			ro.Close()
			if err != nil || got != out {
				t.Fatalf("memory %d: %s has %+v (%v), leader %s has %+v", id, n.id, got, err, final.id, out)
			}
		}
	}
	checkStart := time.Now()
	// Bounded: a minute, and 30 s more per extra round.
	res, info := porcupine.CheckOperationsVerbose(linearize.MemModel, w.history, time.Minute+time.Duration(rounds-1)*30*time.Second)
	t.Logf("porcupine checked the history in %v", time.Since(checkStart).Round(time.Millisecond))
	if res == porcupine.Illegal {
		path := filepath.Join(t.TempDir(), "history.html")
		if f, err := os.Create(path); err == nil {
			porcupine.Visualize(linearize.MemModel, info, f)
			f.Close()
		}
		t.Fatalf("history of %d operations is not linearizable", len(w.history))
	}
	var acked int64
	for _, a := range w.acked {
		acked += a
	}
	t.Logf("faults run: %v", ran)
	t.Logf("%d operations sent, %d in the history, %d rewards acknowledged, %d of unknown outcome; linearizable: %s",
		w.ops.Load(), len(w.history), acked, w.unknown.Load(), res)
	if res != porcupine.Ok {
		t.Logf("porcupine gave up within its time bound (%s): the history is not known to be linearizable", res)
	}
}
