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
	"github.com/redis/go-redis/v9"
)

// The history check: clients reward and read a few memories through
// whichever node leads while the network misbehaves, and the history is
// checked for linearizability with porcupine. The collection has α = 1
// and γ = 0, so a reward r sets Q to r and adds a visit; every reward
// value is unique, so a read's Q says which reward it saw.

// histInput is an operation on memory id: a reward of r, or a read.
type histInput struct {
	read bool
	id   uint64
	r    float64
}

// histOutput is what the operation returned; unknown when the outcome is
// unknown (a lost connection, leadership lost): such an operation may
// take effect at any time after its call, so its return is the end of
// the history.
type histOutput struct {
	unknown bool
	q       float64
	visits  int64
}

// memState is one memory's Q and visits in the model.
type memState struct {
	q      float64
	visits int64
}

var memModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[uint64][]porcupine.Operation{}
		for _, op := range h {
			id := op.Input.(histInput).id
			by[id] = append(by[id], op)
		}
		out := make([][]porcupine.Operation, 0, len(by))
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return memState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(memState), input.(histInput), output.(histOutput)
		if in.read {
			return out.q == s.q && out.visits == s.visits, s
		}
		next := memState{q: in.r, visits: s.visits + 1}
		return out.unknown || out.q == in.r, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(histInput), output.(histOutput)
		if in.read {
			return fmt.Sprintf("get(%d) -> q=%v visits=%d", in.id, out.q, out.visits)
		}
		return fmt.Sprintf("reward(%d, %v) -> %+v", in.id, in.r, out)
	},
}

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
				var in histInput
				var out histOutput
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
					in = histInput{id: id, r: float64(c*1_000_000 + seq + 1)}
					var v []any
					if v, err = rdb.Do(ctx, "MEM.REWARD", "k", in.r, id).Slice(); err == nil {
						out.q, _ = strconv.ParseFloat(fmt.Sprint(v[0]), 64)
						w.acked.Add(1)
					}
				default:
					in = histInput{read: true, id: id}
					var v []any
					if v, err = rdb.Do(ctx, "MEM.GET", "k", id).Slice(); err == nil {
						for j := 0; j+1 < len(v); j += 2 {
							switch v[j] {
							case "q":
								out.q, _ = strconv.ParseFloat(fmt.Sprint(v[j+1]), 64)
							case "visits":
								out.visits = v[j+1].(int64)
							}
						}
					}
				}
				ret := time.Since(w.start).Nanoseconds()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					if strings.HasPrefix(err.Error(), "TRYAGAIN") || in.read {
						continue // not applied, or a read that saw nothing
					}
					out = histOutput{unknown: true}
					ret = 1 << 62
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
	res, info := porcupine.CheckOperationsVerbose(memModel, w.history, time.Minute)
	if res == porcupine.Illegal {
		var b strings.Builder
		porcupine.Visualize(memModel, info, &b)
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

// TestHistoryModelCatchesStaleRead: the model refuses a read that misses
// an acknowledged reward, and accepts a reward of unknown outcome as
// applied or not.
func TestHistoryModelCatchesStaleRead(t *testing.T) {
	stale := []porcupine.Operation{
		{ClientId: 0, Input: histInput{id: 1, r: 5}, Call: 0, Output: histOutput{q: 5}, Return: 10},
		{ClientId: 1, Input: histInput{read: true, id: 1}, Call: 20, Output: histOutput{}, Return: 30},
	}
	if porcupine.CheckOperations(memModel, stale) {
		t.Fatal("a stale read was accepted")
	}
	unknown := []porcupine.Operation{
		{ClientId: 0, Input: histInput{id: 1, r: 5}, Call: 0, Output: histOutput{unknown: true}, Return: 1 << 62},
		{ClientId: 1, Input: histInput{read: true, id: 1}, Call: 20, Output: histOutput{}, Return: 30},
		{ClientId: 1, Input: histInput{read: true, id: 1}, Call: 40, Output: histOutput{q: 5, visits: 1}, Return: 50},
	}
	if !porcupine.CheckOperations(memModel, unknown) {
		t.Fatal("a reward of unknown outcome seen late was refused")
	}
}
