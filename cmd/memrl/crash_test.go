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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// buildMemrl compiles this command once per test binary run.
func buildMemrl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "memrl")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe runs `memrl serve` and waits until it answers PING.
func startServe(t *testing.T, bin, dir, addr string, logf *os.File) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--dir", dir, "--addr", addr, "--sync", "always")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	for i := 0; i < 1000; i++ {
		if rdb.Ping(context.Background()).Err() == nil {
			return cmd
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	t.Fatal("memrl serve did not start")
	return nil
}

// idState is the oracle's knowledge of one memory. Each memory is rewarded
// by one client only, one reward at a time, with α = 1 and rewards 1, 2,
// 3, …, so Q is the last reward applied and visits the number applied.
type idState struct {
	acked    int // rewards acknowledged: Q = acked, visits = acked
	inFlight bool
}

// TestKill9LosesNoAcknowledgedWrite starts `memrl serve --sync always`,
// sends adds and rewards from several clients, kills the server with
// SIGKILL at a random moment, restarts it and checks that every
// acknowledged write is there and nothing else changed, several times over.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real server")
	}
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
	cmd := startServe(t, bin, dir, addr, logf)
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
	rdb.Close()

	nextAdd := uint64(1000)
	for round := 0; round < 4; round++ {
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
					st.inFlight = true
					err := rdb.Do(ctx, "MEM.REWARD", "k", st.acked+1, id).Err()
					if err != nil {
						return // the server is gone: this reward is unacknowledged
					}
					st.acked++
					st.inFlight = false
				}
			}(w)
		}
		// One more client adds memories.
		wg.Add(1)
		go func(first uint64) {
			defer wg.Done()
			for id := first; ; id++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 4, 1, 2, 3, id, "ID", id, "PAYLOAD", strconv.FormatUint(id, 10)).Err(); err != nil {
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

		cmd = startServe(t, bin, dir, addr, logf)
		rdb = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		total := 0
		for id, st := range state {
			v, err := rdb.Do(ctx, "MEM.GET", "k", id).Slice()
			if err != nil {
				t.Fatalf("round %d: MEM.GET %d: %v", round, id, err)
			}
			q, _ := strconv.Atoi(v[3].(string))
			visits := int(v[5].(int64))
			ok := q == st.acked && visits == st.acked ||
				st.inFlight && q == st.acked+1 && visits == st.acked+1
			if !ok {
				t.Fatalf("round %d: memory %d has Q %d visits %d; acknowledged %d (one in flight: %v)",
					round, id, q, visits, st.acked, st.inFlight)
			}
			st.acked, st.inFlight = visits, false
			total += visits
		}
		mu.Lock()
		for _, id := range added {
			v, err := rdb.Do(ctx, "MEM.GET", "k", id).Slice()
			if err != nil || v[13] != strconv.FormatUint(id, 10) {
				t.Fatalf("round %d: acknowledged add %d: %v %v", round, id, v, err)
			}
		}
		t.Logf("round %d: %d acknowledged rewards in all, %d acknowledged adds checked", round, total, len(added))
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
	}(); total == 0 {
		t.Fatal("no reward was acknowledged: the test tested nothing")
	}
	fmt.Fprintln(logf, "done")
}
