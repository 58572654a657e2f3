package replica

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestBatchedPipelines: 8 clients pipeline 32 commands at a time to the
// leader, so that commands of many clients share raft entries. Each
// command gets its own reply, in order: an add's id; a wrong-dimension
// add's error, which leaves its neighbours alone; a reward of the memory
// added just before it in the same pipeline (it would fail if applied
// first); a MULTI/EXEC of two adds, applied whole (a reader never counts
// an odd number of memories in the collection only transactions fill).
// Afterwards every replica holds the same state.
func TestBatchedPipelines(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	rdb := leader.client(t)
	for _, name := range []string{"k", "t"} {
		if err := rdb.Do(ctx, "MEM.CREATE", name, "DIM", 2).Err(); err != nil {
			t.Fatal(err)
		}
	}
	entries0, cmds0 := leader.node.BatchStats()
	const clients, rounds, depth = 8, 6, 32
	var stop atomic.Bool
	readerDone := make(chan error, 1)
	go func() { // transactions are atomic: the count of "t" is always even
		reads := 0
		for !stop.Load() || reads == 0 {
			n, err := rdb.Do(ctx, "MEM.COUNT", "t").Int()
			if err != nil || n%2 != 0 {
				readerDone <- fmt.Errorf("MEM.COUNT t = %d, %v", n, err)
				return
			}
			reads++
		}
		readerDone <- nil
	}()
	var wg sync.WaitGroup
	adds := make([]int, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			cl := redis.NewClient(&redis.Options{Addr: leader.addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 30 * time.Second})
			defer cl.Close()
			for r := 0; r < rounds; r++ {
				base := c*100000 + r*100
				want := make([]string, depth)
				cmds, _ := cl.Pipelined(ctx, func(p redis.Pipeliner) error {
					for j := 0; j < depth; j++ {
						id := base + j + 1
						switch {
						case j == 16:
							p.Do(ctx, "MULTI")
							want[j] = "OK"
						case j == 17 || j == 18:
							p.Do(ctx, "MEM.ADD", "t", "VALUES", 2, 0, 1, "ID", id)
							want[j] = "QUEUED"
						case j == 19:
							p.Do(ctx, "EXEC")
							want[j] = fmt.Sprintf("[%d %d]", base+18, base+19)
						case j%8 == 3:
							p.Do(ctx, "MEM.ADD", "k", "VALUES", 3, 1, 2, 3, "ID", id)
							want[j] = "error"
						case j%8 == 5:
							p.Do(ctx, "MEM.REWARD", "k", 1, id-1)
							want[j] = "reward"
						default:
							p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, j, "ID", id)
							want[j] = fmt.Sprint(id)
							adds[c]++
						}
					}
					return nil
				})
				for j, cmd := range cmds {
					v, err := cmd.(*redis.Cmd).Result()
					switch want[j] {
					case "error":
						if err == nil || !strings.HasPrefix(err.Error(), "ERR") {
							t.Errorf("client %d command %d: %v %v, want an error", c, j, v, err)
						}
					case "reward":
						if err != nil {
							t.Errorf("client %d command %d (a reward of the memory added before it): %v", c, j, err)
						}
					default:
						if got := fmt.Sprint(v); err != nil || got != want[j] {
							t.Errorf("client %d command %d: %v %v, want %s", c, j, v, err, want[j])
						}
					}
				}
			}
		}(c)
	}
	wg.Wait()
	stop.Store(true)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	entries, cmds := leader.node.BatchStats()
	entries, cmds = entries-entries0, cmds-cmds0
	t.Logf("%d commands in %d entries", cmds, entries)
	if cmds <= entries {
		t.Errorf("%d commands in %d entries: no entry held more than one", cmds, entries)
	}
	state := sameState(t, leader, nodes)
	total := 0
	for _, a := range adds {
		total += a
	}
	if got := strings.Count(state, "\n") - 2; got != total+clients*rounds*2 {
		t.Fatalf("%d memories, want %d", got, total+clients*rounds*2)
	}
	if n, err := rdb.Do(ctx, "MEM.COUNT", "t").Int(); err != nil || n != clients*rounds*2 {
		t.Fatalf("MEM.COUNT t = %d, %v", n, err)
	}
}

// TestBatchLeadershipLoss: the leader's raft stops while 8 clients
// pipeline adds to it, so that entries of many commands are in flight.
// Every command gets an answer: its id, -TRYAGAIN (not applied) or an
// error saying its outcome is unknown; none hangs. Every acknowledged add
// is on both survivors afterwards, and they agree.
//
// (A LeadershipTransfer under this load can leave the old leader's
// replication goroutine blocked for good in hashicorp/raft's pipeline,
// and its shutdown with it: issue 28's shutdown item.)
func TestBatchLeadershipLoss(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	if err := leader.client(t).Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	const clients, depth = 8, 32
	var acked atomic.Int64
	var refused atomic.Int64
	var stop atomic.Bool
	ackedIDs := make([][]int, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			cl := redis.NewClient(&redis.Options{Addr: leader.addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 30 * time.Second})
			defer cl.Close()
			next := c*1_000_000 + 1
			for !stop.Load() {
				first := next
				cmds, _ := cl.Pipelined(ctx, func(p redis.Pipeliner) error {
					for j := 0; j < depth; j++ {
						p.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, j, "ID", next)
						next++
					}
					return nil
				})
				for j, cmd := range cmds {
					id, err := cmd.(*redis.Cmd).Int()
					switch {
					case err == nil && id == first+j:
						ackedIDs[c] = append(ackedIDs[c], id)
						acked.Add(1)
					case err != nil && (strings.HasPrefix(err.Error(), "TRYAGAIN") || strings.Contains(err.Error(), "may or may not have been applied")):
						refused.Add(1)
					default:
						errs <- fmt.Errorf("client %d, add of %d: %v %v", c, first+j, id, err)
						return
					}
				}
			}
		}(c)
	}
	deadline := time.Now().Add(60 * time.Second)
	for acked.Load() < 500 && time.Now().Before(deadline) && len(errs) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := leader.node.Raft().Shutdown().Error(); err != nil {
		t.Fatalf("raft shutdown: %v", err)
	}
	for refused.Load() == 0 && time.Now().Before(deadline) && len(errs) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("a client still waits for a reply")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if refused.Load() == 0 {
		t.Fatal("no command was refused after the leadership moved")
	}
	leader.stop(t)
	next := waitLeader(t, nodes)
	t.Logf("%d acknowledged, %d refused or unknown; leader %s then %s", acked.Load(), refused.Load(), leader.id, next.id)
	sameState(t, next, nodes)
	for _, tn := range nodes {
		if tn.node == nil {
			continue
		}
		coll, err := tn.node.DB().Collection("k")
		if err != nil {
			t.Fatal(err)
		}
		for _, ids := range ackedIDs {
			for _, id := range ids {
				if _, err := coll.Get(uint64(id)); err != nil {
					t.Fatalf("%s: acknowledged add %d: %v", tn.id, id, err)
				}
			}
		}
	}
}
