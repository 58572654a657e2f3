package replica

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// liveLeader finds the current leader among the live nodes, or nil.
func liveLeader(nodes []*testNode, mu *sync.Mutex) *testNode {
	mu.Lock()
	defer mu.Unlock()
	for _, tn := range nodes {
		if tn.node != nil && tn.node.IsLeader() {
			return tn
		}
	}
	return nil
}

// TestFailoverUnderLoad: 8 clients add and reward through the leader;
// the leader is shut down mid-way; a new leader takes over, the clients
// follow it, and afterwards every acknowledged add is on both surviving
// replicas, every memory has at least its acknowledged rewards (and at
// most those attempted), and the replicas' states are identical.
func TestFailoverUnderLoad(t *testing.T) {
	nodes := startGroup(t, 3)
	first := waitLeader(t, nodes)
	ctx := context.Background()
	if err := first.client(t).Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards nodes[i].node against the stop below
	const clients = 8
	type tally struct {
		added               map[uint64]bool // acknowledged adds
		acked, tried        map[uint64]int  // rewards
		afterFailoverWrites int
	}
	tallies := make([]*tally, clients)
	var stopped atomic.Bool
	var failedOver atomic.Bool
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		tl := &tally{added: map[uint64]bool{}, acked: map[uint64]int{}, tried: map[uint64]int{}}
		tallies[c] = tl
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var rdb *redis.Client
			var at *testNode
			defer func() {
				if rdb != nil {
					rdb.Close()
				}
			}()
			next := uint64(c*1_000_000 + 1)
			for i := 0; !stopped.Load(); i++ {
				if l := liveLeader(nodes, &mu); l != nil && l != at {
					if rdb != nil {
						rdb.Close()
					}
					at = l
					rdb = redis.NewClient(&redis.Options{Addr: l.addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 10 * time.Second})
				}
				if rdb == nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				var err error
				if i%3 == 0 || len(tl.added) == 0 {
					id := next
					next++
					err = rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, float64(i), "ID", id).Err()
					if err == nil {
						tl.added[id] = true
					}
				} else {
					id := uint64(c*1_000_000+1) + uint64(i)%uint64(len(tl.added))
					if !tl.added[id] {
						continue
					}
					tl.tried[id]++
					err = rdb.Do(ctx, "MEM.REWARD", "k", 1, id).Err()
					if err == nil {
						tl.acked[id]++
					}
				}
				if err != nil {
					time.Sleep(20 * time.Millisecond) // an election, or a lost connection
				} else if failedOver.Load() {
					tl.afterFailoverWrites++
				}
			}
		}(c)
	}
	time.Sleep(1500 * time.Millisecond)
	// Shut the leader down (under mu: stop clears old.node, which the
	// clients' liveLeader reads).
	old := first
	stopStart := time.Now()
	mu.Lock()
	old.stop(t)
	mu.Unlock()
	failedOver.Store(true)
	var survivors []*testNode
	for _, tn := range nodes {
		if tn != old {
			survivors = append(survivors, tn)
		}
	}
	leader := waitLeader(t, survivors)
	t.Logf("new leader %s after %v", leader.id, time.Since(stopStart).Round(time.Millisecond))
	time.Sleep(1500 * time.Millisecond)
	stopped.Store(true)
	wg.Wait()

	sameState(t, leader, survivors)
	db := leader.node.DB()
	coll, err := db.Collection("k")
	if err != nil {
		t.Fatal(err)
	}
	var adds, rewards, after int
	for _, tl := range tallies {
		after += tl.afterFailoverWrites
		for id := range tl.added {
			adds++
			m, err := coll.Get(id)
			if err != nil {
				t.Fatalf("acknowledged add %d lost: %v", id, err)
			}
			if int(m.Visits) < tl.acked[id] || int(m.Visits) > tl.tried[id] {
				t.Fatalf("memory %d: %d visits, %d rewards acknowledged, %d tried", id, m.Visits, tl.acked[id], tl.tried[id])
			}
			rewards += tl.acked[id]
		}
	}
	if after == 0 {
		t.Fatal("no write was acknowledged after the failover")
	}
	t.Logf("%d adds and %d rewards acknowledged, %d writes after the failover", adds, rewards, after)
}
