package main

import (
	"context"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// withoutID removes the first occurrence of id from ids.
func withoutID(ids []uint64, id uint64) []uint64 {
	for i, a := range ids {
		if a == id {
			return append(ids[:i], ids[i+1:]...)
		}
	}
	return ids
}

// rng2 is a goroutine-safe random index below n.
func rng2(n int) int { return rand.Intn(n) }

// buildMemrl returns this command's binary, built once per test binary
// run and shared (clusterBin): 12 tests used to build their own, a link
// of the whole server each (2 to 5 s apiece on a 2-core machine).
func buildMemrl(t *testing.T) string {
	t.Helper()
	return clusterBin(t)
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe runs `memrl serve --sync policy` and waits until it answers
// PING.
func startServe(t *testing.T, bin, dir, addr, policy string, logf *os.File) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--dir", dir, "--addr", addr, "--sync", policy)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	waitServing(t, cmd, rdb, logf.Name())
	return cmd
}

// idState is the oracle's knowledge of one memory. Each memory is rewarded
// by one client only, one reward at a time, with α = 1 and rewards 1, 2,
// 3, …, so Q is the last reward applied and visits the number applied.
type idState struct {
	acked   int // rewards acknowledged: Q = acked, visits = acked
	pending int // rewards sent and not acknowledged (a pipeline's worth at most)
}

// TestKill9LosesNoAcknowledgedWrite starts `memrl serve --sync always`,
// sends adds and rewards from several clients, kills the server with
// SIGKILL at a random moment, restarts it and checks that every
// acknowledged write is there and nothing else changed, several times over.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server")
	}
	kill9Rounds(t, "always")
}

// TestKill9SyncNoneLosesNoAcknowledgedWrite is the same under `--sync
// none` (issue 14): that policy never fsyncs, but like Redis's appendfsync
// no it writes every record to the operating system before the reply, so
// killing the process (not the machine) loses nothing acknowledged.
func TestKill9SyncNoneLosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server")
	}
	kill9Rounds(t, "none")
}

// kill9Rounds runs the kill -9 rounds against `memrl serve --sync policy`.
func kill9Rounds(t *testing.T, policy string) {
	bin := buildMemrl(t)
	dir := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	logf, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()

	const clients, idsPerClient = 8, 4
	state := map[uint64]*idState{}
	var added []uint64 // ids of acknowledged adds beyond the rewarded ones
	cmd := startServe(t, bin, dir, addr, policy, logf)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 64})
	if err := rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 4, "ALPHA", 1).Err(); err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= clients*idsPerClient; id++ {
		if err := rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 4, id, 1, 1, 1, "ID", id).Err(); err != nil {
			t.Fatal(err)
		}
		state[id] = &idState{}
	}
	// One client updates the attributes and payload of this memory in
	// place (MEM.SETATTR and MEM.SETPAYLOAD by key) with counters
	// 1, 2, 3, …
	if err := rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 4, 9, 9, 9, 9, "ID", 900, "KEY", "inplace").Err(); err != nil {
		t.Fatal(err)
	}
	var attrSt, paySt idState
	rdb.Close()

	nextAdd := uint64(1000)
	var allDeleted []uint64
	for round := 0; round < 8; round++ {
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 64})
		var wg sync.WaitGroup
		var mu sync.Mutex // guards added
		stop := make(chan struct{})
		for w := 0; w < clients; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := uint64(w*idsPerClient + i%idsPerClient + 1)
					st := state[id] // owned by this goroutine during the round
					if w%2 == 0 {
						st.pending = 1
						if err := rdb.Do(ctx, "MEM.REWARD", "k", st.acked+1, id).Err(); err != nil {
							return // the server is gone: this reward is unacknowledged
						}
						st.acked++
						st.pending = 0
						continue
					}
					// Odd clients pipeline 8 rewards of one memory: their
					// replies share an fsync, and arrive all or none.
					const depth = 8
					st.pending = depth
					p := rdb.Pipeline()
					for k := 1; k <= depth; k++ {
						p.Do(ctx, "MEM.REWARD", "k", st.acked+k, id)
					}
					if _, err := p.Exec(ctx); err != nil {
						return
					}
					st.acked += depth
					st.pending = 0
				}
			}(w)
		}
		// One client deletes acknowledged adds, one checkpoints.
		var deleted []uint64 // acknowledged deletes, guarded by mu
		var deleting uint64  // a delete in flight, guarded by mu
		wg.Add(2)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				mu.Lock()
				if len(added) < 10 {
					mu.Unlock()
					continue
				}
				id := added[rng2(len(added))]
				deleting = id
				mu.Unlock()
				if err := rdb.Do(ctx, "MEM.DEL", "k", id).Err(); err != nil {
					return
				}
				mu.Lock()
				deleted = append(deleted, id)
				deleting = 0
				added = withoutID(added, id)
				mu.Unlock()
			}
		}()
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if err := rdb.Do(ctx, "MEM.CHECKPOINT").Err(); err != nil {
					return
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				attrSt.pending = 1
				if err := rdb.Do(ctx, "MEM.SETATTR", "k", "KEY", "inplace", fmt.Sprintf(`{"n":%d}`, attrSt.acked+1)).Err(); err != nil {
					return
				}
				attrSt.acked++
				attrSt.pending = 0
				paySt.pending = 1
				if err := rdb.Do(ctx, "MEM.SETPAYLOAD", "k", "KEY", "inplace", strconv.Itoa(paySt.acked+1)).Err(); err != nil {
					return
				}
				paySt.acked++
				paySt.pending = 0
			}
		}()
		// One more client adds memories, with a key and attributes.
		wg.Add(1)
		go func(first uint64) {
			defer wg.Done()
			for id := first; ; id++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 4, 1, 2, 3, id, "ID", id, "PAYLOAD", strconv.FormatUint(id, 10),
					"KEY", fmt.Sprintf("key-%d", id), "ATTRS", fmt.Sprintf(`{"id":%d}`, id)).Err(); err != nil {
					return
				}
				mu.Lock()
				added = append(added, id)
				mu.Unlock()
			}
		}(nextAdd)
		time.Sleep(time.Duration(100+rng.Intn(600)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		close(stop)
		wg.Wait()
		rdb.Close()
		nextAdd += 100000

		cmd = startServe(t, bin, dir, addr, policy, logf)
		rdb = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		total := 0
		for id, st := range state {
			v, err := rdb.Do(ctx, "MEM.GET", "k", id).Slice()
			if err != nil {
				t.Fatalf("round %d: MEM.GET %d: %v", round, id, err)
			}
			q, _ := strconv.Atoi(v[3].(string))
			visits := int(v[5].(int64))
			// Q is the last reward applied and visits the number applied:
			// all acknowledged ones, and a prefix of those in flight.
			if q != visits || visits < st.acked || visits > st.acked+st.pending {
				t.Fatalf("round %d: memory %d has Q %d visits %d; acknowledged %d, in flight %d",
					round, id, q, visits, st.acked, st.pending)
			}
			st.acked, st.pending = visits, 0
			total += visits
		}
		mu.Lock()
		for _, id := range added {
			v, err := rdb.Do(ctx, "MEM.GET", "k", id).Slice()
			if id == deleting && err != nil && strings.Contains(err.Error(), "no such memory") {
				continue // its delete was in flight and survived
			}
			if err != nil || v[13] != strconv.FormatUint(id, 10) || v[15] != fmt.Sprintf(`{"id":%d}`, id) {
				t.Fatalf("round %d: acknowledged add %d: %v %v", round, id, v, err)
			}
			if got, err := rdb.Do(ctx, "MEM.GET", "k", "KEY", fmt.Sprintf("key-%d", id)).Slice(); err != nil || got[1] != int64(id) {
				t.Fatalf("round %d: key of acknowledged add %d finds %v %v", round, id, got, err)
			}
		}
		// The in-place updates: every acknowledged one, perhaps the one in flight.
		v, err := rdb.Do(ctx, "MEM.GET", "k", "KEY", "inplace").Slice()
		if err != nil {
			t.Fatalf("round %d: MEM.GET KEY inplace: %v", round, err)
		}
		var n int
		if a, _ := v[15].(string); a != "" {
			fmt.Sscanf(a, `{"n":%d}`, &n)
		}
		pay, _ := strconv.Atoi(v[13].(string))
		if n < attrSt.acked || n > attrSt.acked+attrSt.pending || pay < paySt.acked || pay > paySt.acked+paySt.pending {
			t.Fatalf("round %d: in-place memory has attrs %v payload %q; acknowledged %+v and %+v", round, v[15], v[13], attrSt, paySt)
		}
		attrSt, paySt = idState{acked: n}, idState{acked: pay}
		allDeleted = append(allDeleted, deleted...)
		for _, id := range allDeleted {
			if err := rdb.Do(ctx, "MEM.GET", "k", id).Err(); err == nil || !strings.Contains(err.Error(), "no such memory") {
				t.Fatalf("round %d: acknowledged delete of %d undone: %v", round, id, err)
			}
		}
		t.Logf("round %d: %d acknowledged rewards in all, %d adds and %d deletes checked, %d attribute and %d payload updates",
			round, total, len(added), len(allDeleted), attrSt.acked, paySt.acked)
		// A delete in flight that did not survive leaves its memory; one
		// that did is no longer a live memory to check.
		if deleting != 0 {
			if rdb.Do(ctx, "MEM.GET", "k", deleting).Err() != nil {
				added = withoutID(added, deleting)
			}
		}
		mu.Unlock()
		rdb.Close()
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("clean shutdown: %v", err)
	}
	if total := func() int {
		n := 0
		for _, st := range state {
			n += st.acked
		}
		return n
	}(); total == 0 || attrSt.acked == 0 || paySt.acked == 0 {
		t.Fatalf("rewards, attribute and payload updates acknowledged: %d, %d, %d; the test tested nothing", total, attrSt.acked, paySt.acked)
	}
	fmt.Fprintln(logf, "done")
}
