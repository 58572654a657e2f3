package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/internal/cliflag"
)

// memrl cluster add --new-shard and memrl cluster reshard: grow a running
// local cluster by a shard and give it slots (docs/CLUSTER.md
// "Resharding").
//
// add --new-shard starts a new raft group of --replicas nodes (they
// bootstrap from nodes.tsv, as cluster start's do) with no slots: first it
// writes slots.tsv if there is none, so that the default slot map of the
// old shard count stays the map (the default for one more shard would
// move slots), then adds the nodes to nodes.tsv, starts them, waits for
// the group's leader, and has every node read both files again (CLUSTER
// RELOAD).
//
// reshard moves --slots slots from shard --from to shard --to, one slot
// at a time, following Redis's steps: IMPORTING on the target, MIGRATING
// on the source (from then on the source refuses to create a collection
// in the slot, even one routed before: the apply-time guard), each of
// the slot's collections moved with its data (cluster_move.go), NODE on
// the target then the source; at the end slots.tsv is rewritten
// (temporary file, fsync, rename) and every node reloads it. It takes
// the source's highest slots, so a run that stopped, run again, takes the
// same ones (the moved ones are the target's in slots.tsv).

const clusterReshardUsage = `usage:
  memrl cluster add --dir DIR --new-shard [--replicas R] [--port P] [-- serve flags...]
  memrl cluster reshard --dir DIR --from S --to T --slots N
  memrl cluster rebalance --dir DIR
`

// clusterAddShard is memrl cluster add --new-shard.
func clusterAddShard(args []string) error {
	args, serveArgs, err := setNodeAuth(args) // cluster_security.go
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("cluster add --new-shard", flag.ContinueOnError)
	dir := fs.String("dir", "", "the running cluster's folder")
	fs.Bool("new-shard", true, "add a new shard (a raft group with no slots)")
	replicas := fs.Int("replicas", 0, "nodes of the new shard (default: as many as shard 0 has)")
	port := fs.Int("port", 0, "the first new node's client port (default: one above the highest port in nodes.tsv)")
	wait := fs.Duration("wait", 60*time.Second, "how long to wait for the new group to elect a leader")
	fs.Usage = func() { fmt.Fprint(fs.Output(), clusterReshardUsage); fs.PrintDefaults() }
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	if *dir == "" {
		return cliflag.Usagef("--dir is required")
	}
	if serveArgs, err = withClusterSecret(*dir, serveArgs, os.LookupEnv, false); err != nil {
		return err
	}
	nodesPath := filepath.Join(*dir, cluster.NodesFile)
	nodes, err := cluster.ReadNodes(nodesPath)
	if err != nil {
		return err
	}
	shards := cluster.Shards(nodes)
	if *replicas == 0 {
		*replicas = len(slices.DeleteFunc(slices.Clone(nodes), func(n cluster.Node) bool { return n.Shard != 0 }))
	}
	if *replicas < 1 || *replicas > 9 {
		return cliflag.Usagef("--replicas must be in 1..9")
	}
	highest := 0
	for _, n := range nodes {
		if _, p, err := net.SplitHostPort(n.Addr); err == nil {
			highest = max(highest, atoiOr0(p))
		}
	}
	if *port == 0 {
		*port = highest + 1
	}
	if *port < 1 || *port+*replicas-1+cluster.RaftPortOffset > 65535 {
		return cliflag.Usagef("--port %d: the new ports and their raft ports (+%d) must be at most 65535", *port, cluster.RaftPortOffset)
	}
	// Freeze the slot map before the shard count changes.
	slotsPath := filepath.Join(*dir, cluster.SlotsFile)
	slots, err := cluster.ReadSlots(slotsPath, shards)
	if err != nil {
		return err
	}
	if err := cluster.WriteSlots(slotsPath, slots, shards); err != nil {
		return err
	}
	var added []cluster.Node
	for i := 0; len(added) < *replicas; i++ {
		id := "n" + strconv.Itoa(len(nodes)+i)
		if slices.ContainsFunc(nodes, func(n cluster.Node) bool { return n.ID == id }) {
			continue
		}
		added = append(added, cluster.Node{ID: id, Addr: "127.0.0.1:" + strconv.Itoa(*port+len(added)), Shard: shards})
	}
	all := append(slices.Clone(nodes), added...)
	// The new nodes read their lines (and their group's voters) as they
	// start; the old nodes learn them only by CLUSTER RELOAD below, once
	// the group has a leader.
	if err := cluster.WriteNodes(nodesPath, all); err != nil {
		return err
	}
	var pids []int
	undo := func(err error) error {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cluster.WriteNodes(nodesPath, nodes)
		return err
	}
	for i := range added {
		pid, err := startNode(*dir, nodesPath, added[i], serveArgs)
		if err != nil {
			return undo(err)
		}
		pids = append(pids, pid)
		all[len(nodes)+i].PID = pid
	}
	if err := cluster.WriteNodes(nodesPath, all); err != nil {
		return undo(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	if _, err := shardLeader(ctx, all, shards); err != nil {
		return undo(fmt.Errorf("%w (node logs: %s)", err, filepath.Join(*dir, added[0].ID+".log")))
	}
	for _, n := range added {
		for !followsLeader(ctx, n) {
			if ctx.Err() != nil {
				return undo(fmt.Errorf("%s has not heard from its group's leader", n.ID))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := reloadAll(ctx, all); err != nil {
		return err
	}
	fmt.Printf("memrl cluster: added shard %d (no slots yet: memrl cluster reshard --dir %s --from S --to %d --slots N)\n", shards, *dir, shards)
	for _, n := range all[len(nodes):] {
		fmt.Printf("  %s\t%s\tshard %d\tpid %d\n", n.ID, n.Addr, n.Shard, n.PID)
	}
	return nil
}

func atoiOr0(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// clusterReshard is memrl cluster reshard.
func clusterReshard(args []string) error {
	args, _, err := setNodeAuth(args) // cluster_security.go
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("cluster reshard", flag.ContinueOnError)
	dir := fs.String("dir", "", "the running cluster's folder")
	from := fs.Int("from", -1, "the shard to take slots from")
	to := fs.Int("to", -1, "the shard to give them to")
	count := fs.Int("slots", 0, "how many slots to move")
	wait := fs.Duration("wait", 60*time.Second, "how long to wait for a shard's leader at each step")
	fs.Usage = func() { fmt.Fprint(fs.Output(), clusterReshardUsage); fs.PrintDefaults() }
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	if *dir == "" {
		return cliflag.Usagef("--dir is required")
	}
	nodesPath := filepath.Join(*dir, cluster.NodesFile)
	nodes, err := cluster.ReadNodes(nodesPath)
	if err != nil {
		return err
	}
	shards := cluster.Shards(nodes)
	if *from < 0 || *from >= shards || *to < 0 || *to >= shards || *from == *to {
		return cliflag.Usagef("--from and --to must be two different shards in 0..%d", shards-1)
	}
	slotsPath := filepath.Join(*dir, cluster.SlotsFile)
	slots, err := cluster.ReadSlots(slotsPath, shards)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	moveWait = *wait
	// A move a stopped run left is finished or rolled back first.
	if n, err := resolveMoves(ctx, nodes, shards); err != nil {
		return err
	} else if n > 0 {
		fmt.Printf("memrl cluster: resolved %d collection moves left by an earlier run\n", n)
	}
	var pick []int
	for s := cluster.NumSlots - 1; s >= 0; s-- {
		if int(slots[s]) == *from {
			pick = append(pick, s)
		}
	}
	if *count < 1 || len(pick) < *count {
		return cliflag.Usagef("--slots %d: shard %d has %d slots", *count, *from, len(pick))
	}
	// The highest slots, with their collections: the same ones again
	// when a stopped run is run again (slots.tsv then names the moved
	// ones at the target).
	pick = pick[:*count]
	moved, err := moveSlots(*wait, nodes, slots, pick, *from, *to)
	if moved > 0 || err == nil {
		// What moved is in slots.tsv even when a slot failed: a slot
		// not moved is left as its shards' SETSLOT states say (run
		// reshard again, or SETSLOT STABLE).
		if werr := writeSlotsAndReload(*dir, nodes, slots, shards); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		return fmt.Errorf("%w (%d slots moved)", err, moved)
	}
	fmt.Printf("memrl cluster: moved %d slots from shard %d to shard %d", moved, *from, *to)
	if totals.collections > 0 {
		fmt.Printf(", %d collections (%d bytes; %d commands replayed; writes paused at most %v)",
			totals.collections, totals.bytes, totals.replayed, totals.maxPause.Round(time.Microsecond))
	}
	fmt.Println()
	return nil
}

// reshardParallel is how many slots move at once: each move is four
// raft commits, and concurrent proposals share the groups' appends and
// fsyncs. 16 at once on a loaded 2-core machine running 9 nodes cut the
// clients' write throughput to a half and delayed heartbeats enough for
// an election; 4 is gentler.
const reshardParallel = 4

// moveSlots moves the slots of pick from shard from to shard to
// (moveSlot), reshardParallel at a time, and records each moved slot in
// slots. The first error stops the moves not yet started.
func moveSlots(wait time.Duration, nodes []cluster.Node, slots *cluster.SlotMap, pick []int, from, to int) (moved int, err error) {
	var mu sync.Mutex // guards moved, err, slots
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(reshardParallel, len(pick)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				e := moveSlot(wait, nodes, s, from, to)
				mu.Lock()
				switch {
				case e != nil:
					err = errors.Join(err, fmt.Errorf("slot %d: %w", s, e))
				default:
					slots[s] = uint16(to)
					moved++
				}
				mu.Unlock()
			}
		}()
	}
	for _, s := range pick {
		mu.Lock()
		stop := err != nil
		mu.Unlock()
		if stop {
			break
		}
		work <- s
	}
	close(work)
	wg.Wait()
	return moved, err
}

// moveSlot moves one slot from shard from to shard to (see above), the
// collections in it with their data (moveCollection, cluster_move.go).
func moveSlot(wait time.Duration, nodes []cluster.Node, slot, from, to int) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, t := strconv.Itoa(slot), strconv.Itoa(to)
	// IMPORTING on the target; "already the owner": a reshard that
	// stopped after the target's NODE, run again.
	if err := onLeader(ctx, nodes, to, "CLUSTER", "SETSLOT", s, "IMPORTING", strconv.Itoa(from)); err != nil &&
		!strings.Contains(err.Error(), "already the owner") {
		return err
	}
	if err := onLeader(ctx, nodes, from, "CLUSTER", "SETSLOT", s, "MIGRATING", t); err != nil {
		if strings.Contains(err.Error(), "(shard "+t+" is)") {
			// The source's NODE, the last step, was applied by a
			// reshard that stopped before writing slots.tsv: moved.
			return nil
		}
		return err
	}
	// Every entry before MIGRATING in the source's log is applied on its
	// leader now, and any create after it is refused (ASK to the
	// target): the slot's collections at the source are these, and only
	// fewer once each is moved.
	for round := 0; ; round++ {
		names, err := slotCollections(context.Background(), nodes, from, slot) // cluster_move.go
		if err != nil {
			return err
		}
		if len(names) == 0 {
			break
		}
		if round == 3 {
			return fmt.Errorf("slot %d: shard %d still has %v after moving them", slot, from, names)
		}
		for _, name := range names {
			st, err := moveCollection(context.Background(), nodes, name, from, to)
			if err != nil {
				return fmt.Errorf("moving collection %s: %w", name, err)
			}
			totals.add(name, st)
		}
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), wait)
	defer cancel2()
	if err := onLeader(ctx2, nodes, to, "CLUSTER", "SETSLOT", s, "NODE", t); err != nil {
		return err
	}
	return onLeader(ctx2, nodes, from, "CLUSTER", "SETSLOT", s, "NODE", t)
}

// totals are the moves of this run (memrl runs one reshard or rebalance).
var totals moveTotals

// leaderCache remembers each shard's leader between the commands of a
// reshard (found again when one does not answer as the leader).
var (
	leaderMu    sync.Mutex // guards leaderCache
	leaderCache = map[int]cluster.Node{}
)

// onLeader runs a command on shard's leader, found again (and the command
// retried) if leadership moves or the shard has none for a while.
func onLeader(ctx context.Context, nodes []cluster.Node, shard int, args ...string) error {
	_, err := leaderReply(ctx, nodes, shard, args...)
	return err
}

func leaderReply(ctx context.Context, nodes []cluster.Node, shard int, args ...string) (any, error) {
	for {
		leaderMu.Lock()
		l, ok := leaderCache[shard]
		leaderMu.Unlock()
		if !ok {
			var err error
			if l, err = shardLeader(ctx, nodes, shard); err != nil {
				return nil, err
			}
			leaderMu.Lock()
			leaderCache[shard] = l
			leaderMu.Unlock()
		}
		v, err := nodeAuth.Do(ctx, l.Addr, 10*time.Second, args...)
		var re cluster.RedisError
		if err == nil || (errors.As(err, &re) && !retryable(string(re))) {
			return v, err
		}
		leaderMu.Lock()
		delete(leaderCache, shard)
		leaderMu.Unlock()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s on shard %d: %w", strings.Join(args, " "), shard, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// retryable reports whether a node's error reply means "ask the leader
// again" (it is not, or no longer, the leader; it is loading). SETSLOT
// is idempotent, so repeating one whose outcome was unknown is safe.
func retryable(msg string) bool {
	for _, p := range []string{"MOVED ", "CLUSTERDOWN ", "TRYAGAIN ", "LOADING "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	// The leader lost leadership while committing: the outcome is unknown.
	return strings.Contains(msg, "may or may not have been applied")
}

// writeSlotsAndReload rewrites slots.tsv atomically and has every node
// read it again. A node that cannot be reached is only warned about: it
// reads slots.tsv when it starts, and meanwhile the shards' SETSLOT NODE
// states send its clients on; a node that answers with an error fails
// the command.
func writeSlotsAndReload(dir string, nodes []cluster.Node, slots *cluster.SlotMap, shards int) error {
	if err := cluster.WriteSlots(filepath.Join(dir, cluster.SlotsFile), slots, shards); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, n := range nodes {
		_, err := nodeAuth.Do(ctx, n.Addr, 5*time.Second, "CLUSTER", "RELOAD")
		var re cluster.RedisError
		switch {
		case err == nil:
		case errors.As(err, &re):
			errs = append(errs, fmt.Errorf("CLUSTER RELOAD on %s: %w", n.ID, err))
		default:
			fmt.Fprintf(os.Stderr, "memrl cluster: warning: CLUSTER RELOAD on %s: %v (it reads %s when it starts; send it CLUSTER RELOAD once it is back)\n",
				n.ID, err, cluster.SlotsFile)
		}
	}
	return errors.Join(errs...)
}
