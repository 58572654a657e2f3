package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestReplicaSigtermHandsOver runs a 3-node shard of real `memrl serve`
// processes. SIGTERM to the leader hands leadership to a follower before
// the process exits (its log says so), and a write is acknowledged by the
// new leader shortly after. Then, with the remaining follower stopped by
// SIGSTOP (no quorum, and a peer that reads nothing), SIGTERM to the new
// leader still ends the process within the shutdown bound.
func TestReplicaSigtermHandsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	bin := buildMemrl(t)
	dir := t.TempDir()
	nodesPath := filepath.Join(dir, "nodes.tsv")
	procs := make([]*replicaProc, 3)
	lines := "# memrl nodes v1\n"
	for i := range procs {
		procs[i] = &replicaProc{id: fmt.Sprintf("n%d", i+1), addr: clusterAddr(t)}
		lines += fmt.Sprintf("%s\t%s\t0\t0\n", procs[i].id, procs[i].addr)
	}
	if err := os.WriteFile(nodesPath, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	exited := map[*replicaProc]chan error{}
	for _, p := range procs {
		logf, err := os.Create(filepath.Join(dir, p.id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		p.cmd = exec.Command(bin, "serve", "--dir", filepath.Join(dir, p.id), "--cluster-nodes", nodesPath, "--node-id", p.id)
		p.cmd.Stdout, p.cmd.Stderr = logf, logf
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.rdb = redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
		ch := make(chan error, 1)
		exited[p] = ch
		p := p
		go func() { ch <- p.cmd.Wait() }()
		t.Cleanup(func() {
			p.rdb.Close()
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
			<-ch
			ch <- nil // for any later reader
			logf.Close()
		})
		waitServing(t, p.cmd, p.rdb, logf.Name())
	}
	waitFor := func(what string, f func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !f(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	ctx := context.Background()
	var first *replicaProc
	waitFor("a leader", func() bool { first = leaderOf(procs); return first != nil })
	if err := first.rdb.Do(ctx, "MEM.CREATE", "k", "DIM", 2).Err(); err != nil {
		t.Fatal(err)
	}
	// Every follower has the collection before the leader goes.
	waitFor("followers caught up", func() bool {
		want := raftStatus(first.rdb)["applied_index"]
		for _, p := range procs {
			if raftStatus(p.rdb)["applied_index"] != want {
				return false
			}
		}
		return true
	})

	// exitWithin waits for p to exit after a SIGTERM sent at start.
	exitWithin := func(p *replicaProc, start time.Time, bound time.Duration) time.Duration {
		t.Helper()
		select {
		case err := <-exited[p]:
			exited[p] <- err
			p.dead.Store(true)
			return time.Since(start)
		case <-time.After(bound):
			t.Fatalf("%s still running %v after SIGTERM", p.id, bound)
			return 0
		}
	}
	start := time.Now()
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var next *replicaProc
	var rest []*replicaProc
	for _, p := range procs {
		if p != first {
			rest = append(rest, p)
		}
	}
	var wrote time.Duration
	waitFor("a write on the new leader", func() bool {
		for _, p := range rest {
			if p.rdb.Do(ctx, "MEM.ADD", "k", "VALUES", 2, 1, 1).Err() == nil {
				next, wrote = p, time.Since(start)
				return true
			}
		}
		return false
	})
	took := exitWithin(first, start, 30*time.Second)
	logged, _ := os.ReadFile(filepath.Join(dir, first.id+".log"))
	if !strings.Contains(string(logged), "leadership handed over") {
		t.Fatalf("%s's log does not say it handed leadership over:\n%s", first.id, logged)
	}
	t.Logf("SIGTERM to leader %s: %s acknowledged a write after %v; %s exited after %v", first.id, next.id,
		wrote.Round(time.Millisecond), first.id, took.Round(time.Millisecond))

	// The last follower paused: the leader can neither hand over nor
	// commit, and its raft connections to the paused peer get no reply.
	var paused *replicaProc
	for _, p := range rest {
		if p != next {
			paused = p
		}
	}
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := next.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// handOverTimeout, the server's 10 s and the node's 10 s at most.
	took = exitWithin(next, start, handOverTimeout+redirectLinger+25*time.Second)
	t.Logf("SIGTERM to leader %s with its only live follower paused: exited after %v", next.id, took.Round(time.Millisecond))
	paused.cmd.Process.Signal(syscall.SIGCONT)
}
