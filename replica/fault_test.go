package replica

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/hashicorp/raft"
	"github.com/memrl/memrl/internal/linearize"
	"github.com/redis/go-redis/v9"
)

// The history check: clients reward and read a few memories through
// whichever node leads while the network misbehaves, and the history is
// checked for linearizability with porcupine against linearize.MemModel.

// faultWorkload runs clients against the group until stop, recording the
// porcupine history of rewards and reads of memories 1..4 and the
// acknowledged adds (ids from 1000). Writes refused with TRYAGAIN are
// known not applied and left out of the history.
type faultWorkload struct {
	mu      sync.Mutex // guards history and added
	history []porcupine.Operation
	added   []uint64
	acked   atomic.Int64
	start   time.Time
}

func (w *faultWorkload) run(t *testing.T, nodes []*testNode, nodesMu *sync.Mutex, clients int, stop *atomic.Bool) *sync.WaitGroup {
	ctx := context.Background()
	var wg sync.WaitGroup
	var nextAdd atomic.Uint64
	nextAdd.Store(1000)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(c)))
			var rdb *redis.Client
			var at *testNode
			defer func() {
				if rdb != nil {
					rdb.Close()
				}
			}()
			for seq := 0; !stop.Load(); seq++ {
				if l := liveLeader(nodes, nodesMu); l != nil && l != at {
					if rdb != nil {
						rdb.Close()
					}
					at = l
					rdb = redis.NewClient(&redis.Options{Addr: l.addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 5 * time.Second})
				}
				if rdb == nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				id := uint64(1 + rng.Intn(4))
				var in linearize.Input
				var out linearize.Output
				call := time.Since(w.start).Nanoseconds()
				var err error
				switch k := rng.Intn(10); {
				case k < 2: // an add, for the acknowledged-writes check
					aid := nextAdd.Add(1)
					if err = rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 1, "ID", aid).Err(); err == nil {
						w.mu.Lock()
						w.added = append(w.added, aid)
						w.mu.Unlock()
						w.acked.Add(1)
					}
					if err != nil {
						time.Sleep(10 * time.Millisecond)
					}
					continue
				case k < 6:
					in = linearize.Input{ID: id, R: float64(c*1_000_000 + seq + 1)}
					var v []any
					if v, err = rdb.Do(ctx, "MEM.REWARD", "k", in.R, id).Slice(); err == nil {
						out.Q, _ = strconv.ParseFloat(fmt.Sprint(v[0]), 64)
						w.acked.Add(1)
					}
				default:
					in = linearize.Input{Read: true, ID: id}
					var v []any
					if v, err = rdb.Do(ctx, "MEM.GET", "k", id).Slice(); err == nil {
						for j := 0; j+1 < len(v); j += 2 {
							switch v[j] {
							case "q":
								out.Q, _ = strconv.ParseFloat(fmt.Sprint(v[j+1]), 64)
							case "visits":
								out.Visits = v[j+1].(int64)
							}
						}
					}
				}
				ret := time.Since(w.start).Nanoseconds()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					if strings.HasPrefix(err.Error(), "TRYAGAIN") || in.Read {
						continue // not applied, or a read that saw nothing
					}
					out = linearize.Output{Unknown: true}
					ret = linearize.Never
				}
				w.mu.Lock()
				w.history = append(w.history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				w.mu.Unlock()
			}
		}(c)
	}
	return &wg
}

// check verifies the end state: every node caught up and identical,
// every acknowledged add present, the history linearizable.
func (w *faultWorkload) check(t *testing.T, nodes []*testNode) {
	t.Helper()
	leader := waitLeader(t, nodes)
	sameState(t, leader, nodes)
	c, err := leader.node.DB().Collection("k")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range w.added {
		if _, err := c.Get(id); err != nil {
			t.Fatalf("acknowledged add %d lost: %v", id, err)
		}
	}
	res, info := porcupine.CheckOperationsVerbose(linearize.MemModel, w.history, time.Minute)
	if res == porcupine.Illegal {
		var b strings.Builder
		porcupine.Visualize(linearize.MemModel, info, &b)
		t.Fatalf("history of %d operations is not linearizable (visualization %d bytes)", len(w.history), b.Len())
	}
	t.Logf("%d acknowledged writes, %d adds; history of %d operations: %s", w.acked.Load(), len(w.added), len(w.history), res)
}

// startFaultGroup starts 3 nodes on fn, creates collection k (α 1, γ 0)
// with memories 1..4.
func startFaultGroup(t *testing.T, fn *faultNet) []*testNode {
	nodes := startGroupWith(t, 3, fn.transport)
	leader := waitLeader(t, nodes)
	rdb := leader.client(t)
	ctx := context.Background()
	if err := rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2, "ALPHA", 1, "GAMMA", 0, "QINIT", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 4; id++ {
		if err := rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, float64(id), "ID", id).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// TestPartitionedLeader: the leader is cut off from the majority while
// clients write through whichever node leads; the majority elects a new
// leader; nothing the old leader acknowledges after the cut is lost (it
// can acknowledge nothing: a minority commits nothing), and once the
// partition heals the old leader catches up; every acknowledged write is
// everywhere and the history is linearizable.
func TestPartitionedLeader(t *testing.T) {
	fn := newFaultNet()
	nodes := startFaultGroup(t, fn)
	var addrs []string
	for _, tn := range nodes {
		addrs = append(addrs, tn.raftAddr)
	}
	w := &faultWorkload{start: time.Now()}
	var mu sync.Mutex
	var stop atomic.Bool
	wg := w.run(t, nodes, &mu, 6, &stop)
	time.Sleep(time.Second)
	old := waitLeader(t, nodes)
	fn.isolate(old.raftAddr, addrs)
	var majority []*testNode
	for _, tn := range nodes {
		if tn != old {
			majority = append(majority, tn)
		}
	}
	cutAt := old.node.Raft().Stats()["commit_index"]
	newLeader := waitLeader(t, majority)
	t.Logf("%s isolated (commit index %s); %s leads the majority", old.id, cutAt, newLeader.id)
	time.Sleep(2 * time.Second)
	fn.heal()
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	if old.node.Raft().State() == raft.Leader && newLeader.node.Raft().State() == raft.Leader {
		t.Fatal("two leaders after the partition healed")
	}
	w.check(t, nodes)
}

// TestDropsAndDelays: 5% of raft's writes fail (their connection closes)
// and the others are delayed up to 5 ms while clients write; then the
// network heals: every acknowledged write is everywhere, the history is
// linearizable.
func TestDropsAndDelays(t *testing.T) {
	fn := newFaultNet()
	nodes := startFaultGroup(t, fn)
	w := &faultWorkload{start: time.Now()}
	var mu sync.Mutex
	var stop atomic.Bool
	fn.setNoise(0.05, 5*time.Millisecond)
	wg := w.run(t, nodes, &mu, 6, &stop)
	time.Sleep(4 * time.Second)
	fn.heal()
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	w.check(t, nodes)
}
