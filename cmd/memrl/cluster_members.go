package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/internal/cliflag"
)

// memrl cluster add|remove: change a running local cluster's membership.
//
// add starts one more memrl serve for a shard with --cluster-join (it does
// not bootstrap a raft group of its own), has the shard's leader add it as
// a voter (RAFT.ADD; the leader then sends it a snapshot and the log), and
// tells every node to read nodes.tsv again (CLUSTER RELOAD), so that
// CLUSTER SLOTS/SHARDS/NODES and the routers know it.
//
// remove has the shard's leader remove the node from the group
// (RAFT.REMOVE; a leader removing itself steps down first), stops the
// process, and removes its line from nodes.tsv and every router
// (CLUSTER RELOAD). The node's data folder is left on disk.
//
// Order matters for no lost writes: a node is a voter before any router
// sends it a client, and stops being one before it stops.

func clusterAdd(args []string) error {
	args, serveArgs, err := setNodeAuth(args) // cluster_security.go
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("cluster add", flag.ContinueOnError)
	dir := fs.String("dir", "", "the running cluster's folder")
	shard := fs.Int("shard", -1, "the shard the new node joins")
	port := fs.Int("port", 0, "its client port (default: one above the highest port in nodes.tsv)")
	wait := fs.Duration("wait", 60*time.Second, "how long to wait for the node to join and catch up")
	fs.Usage = func() { fmt.Fprint(fs.Output(), clusterUsage()); fs.PrintDefaults() }
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
	if *shard < 0 || *shard >= cluster.Shards(nodes) {
		return cliflag.Usagef("--shard must be in 0..%d", cluster.Shards(nodes)-1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	leader, err := shardLeader(ctx, nodes, *shard)
	if err != nil {
		return err
	}
	// A fresh id and port.
	id, highest := "", 0
	for i := len(nodes); id == ""; i++ {
		if c := "n" + strconv.Itoa(i); !slices.ContainsFunc(nodes, func(n cluster.Node) bool { return n.ID == c }) {
			id = c
		}
	}
	for _, n := range nodes {
		if _, p, err := net.SplitHostPort(n.Addr); err == nil {
			if v, _ := strconv.Atoi(p); v > highest {
				highest = v
			}
		}
	}
	if *port == 0 {
		*port = highest + 1
	}
	if *port < 1 || *port+cluster.RaftPortOffset > 65535 {
		return cliflag.Usagef("--port %d: it and its raft port (+%d) must be at most 65535", *port, cluster.RaftPortOffset)
	}
	node := cluster.Node{ID: id, Addr: "127.0.0.1:" + strconv.Itoa(*port), Shard: *shard}
	// The new node reads its own line as it starts; the routers learn it
	// only after it is a voter (CLUSTER RELOAD below).
	if err := cluster.WriteNodes(nodesPath, append(slices.Clone(nodes), node)); err != nil {
		return err
	}
	undo := func(err error) error {
		cluster.WriteNodes(nodesPath, nodes)
		return err
	}
	pid, err := startNode(*dir, nodesPath, node, append([]string{"--cluster-join"}, serveArgs...))
	if err != nil {
		return undo(err)
	}
	node.PID = pid
	nodes = append(nodes, node)
	if err := cluster.WriteNodes(nodesPath, nodes); err != nil {
		return err
	}
	// RAFT.ADD on the shard's leader; retried while the new node's
	// listener comes up or the leadership moves.
	for {
		_, err = nodeAuth.Do(ctx, leader.Addr, 10*time.Second, "RAFT.ADD", node.ID, node.Addr)
		if err == nil {
			break
		}
		if ctx.Err() != nil || !processAlive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			return undo(fmt.Errorf("RAFT.ADD %s on %s: %w (node log: %s)", node.ID, leader.ID, err, lastLine(filepath.Join(*dir, node.ID+".log"))))
		}
		time.Sleep(100 * time.Millisecond)
		if l, lerr := shardLeader(ctx, nodes[:len(nodes)-1], *shard); lerr == nil {
			leader = l
		}
	}
	// It has joined once it names the leader (ROLE: slave, leader known).
	for !followsLeader(ctx, node) {
		if ctx.Err() != nil {
			return fmt.Errorf("%s joined the group but has not heard from its leader", node.ID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := reloadAll(ctx, nodes); err != nil {
		return err
	}
	fmt.Printf("memrl cluster: added %s\t%s\tshard %d\tpid %d\n", node.ID, node.Addr, node.Shard, node.PID)
	return nil
}

func clusterRemove(args []string) error {
	// The serve flags after "--" only tell the nodes' password and TLS.
	args, _, err := setNodeAuth(args) // cluster_security.go
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("cluster remove", flag.ContinueOnError)
	dir := fs.String("dir", "", "the running cluster's folder")
	id := fs.String("node", "", "the node to remove")
	timeout := fs.Duration("timeout", 15*time.Second, "how long the node may take to exit after SIGTERM before it gets SIGKILL")
	fs.Usage = func() { fmt.Fprint(fs.Output(), clusterUsage()); fs.PrintDefaults() }
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	if *dir == "" || *id == "" {
		return cliflag.Usagef("--dir and --node are required")
	}
	nodesPath := filepath.Join(*dir, cluster.NodesFile)
	nodes, err := cluster.ReadNodes(nodesPath)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(nodes, func(n cluster.Node) bool { return n.ID == *id })
	if i < 0 {
		return fmt.Errorf("no node %q in %s", *id, nodesPath)
	}
	node := nodes[i]
	rest := slices.Delete(slices.Clone(nodes), i, i+1)
	if !slices.ContainsFunc(rest, func(n cluster.Node) bool { return n.Shard == node.Shard }) {
		return fmt.Errorf("%s is the last node of shard %d: its slots would have no node", node.ID, node.Shard)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout+30*time.Second)
	defer cancel()
	// RAFT.REMOVE on the shard's leader, which may be the node itself.
	for {
		leader, err := shardLeader(ctx, nodes, node.Shard)
		if err == nil {
			if _, err = nodeAuth.Do(ctx, leader.Addr, 10*time.Second, "RAFT.REMOVE", node.ID); err == nil {
				break
			}
			// A try whose reply was lost (the leader removed, or
			// leadership lost once the entry was appended) may have
			// removed it: the next answers that it is not a member.
			var re cluster.RedisError
			if errors.As(err, &re) && strings.Contains(string(re), "not a member") {
				break
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("RAFT.REMOVE %s: %w", node.ID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A leader that removed itself steps down; return once the shard's
	// other nodes have elected one, so the shard accepts writes again.
	if _, err := shardLeader(ctx, rest, node.Shard); err != nil {
		return err
	}
	// The routers stop sending it clients before it stops.
	if err := cluster.WriteNodes(nodesPath, rest); err != nil {
		return err
	}
	if err := reloadAll(ctx, rest); err != nil {
		return err
	}
	if processAlive(node.PID) && isNodeProcess(node) {
		syscall.Kill(node.PID, syscall.SIGTERM)
		deadline := time.Now().Add(*timeout)
		for processAlive(node.PID) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if processAlive(node.PID) {
			syscall.Kill(node.PID, syscall.SIGKILL)
		}
	}
	fmt.Printf("memrl cluster: removed %s (shard %d); its data stays in %s\n", node.ID, node.Shard, filepath.Join(*dir, node.ID))
	return nil
}

// startNode starts memrl serve for node n in the background (data in
// dir/<id>, output in dir/<id>.log) and returns its pid.
func startNode(dir, nodesPath string, n cluster.Node, extra []string) (int, error) {
	bin, err := os.Executable()
	if err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, n.ID+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	args := append([]string{"serve", "--dir", filepath.Join(dir, n.ID), "--addr", n.Addr,
		"--cluster-nodes", nodesPath, "--node-id", n.ID}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C in the terminal that ran memrl
	// cluster start does not reach the nodes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	// Reap it if it exits while we wait (a port in use), so that
	// processAlive sees it gone; after we return, init reaps it.
	go cmd.Wait()
	return cmd.Process.Pid, nil
}

// shardLeader asks the nodes of shard their ROLE and returns the one that
// says master.
func shardLeader(ctx context.Context, nodes []cluster.Node, shard int) (cluster.Node, error) {
	for {
		for _, n := range nodes {
			if n.Shard != shard {
				continue
			}
			if r, err := nodeAuth.Do(ctx, n.Addr, 2*time.Second, "ROLE"); err == nil {
				if a, ok := r.([]any); ok && len(a) > 0 && a[0] == "master" {
					return n, nil
				}
			}
		}
		if ctx.Err() != nil {
			return cluster.Node{}, fmt.Errorf("shard %d has no leader: %w", shard, ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// followsLeader reports whether n says it is a replica that knows its
// leader (or is the leader).
func followsLeader(ctx context.Context, n cluster.Node) bool {
	r, err := nodeAuth.Do(ctx, n.Addr, 2*time.Second, "ROLE")
	a, ok := r.([]any)
	if err != nil || !ok || len(a) < 3 {
		return err == nil && ok && len(a) > 0 && a[0] == "master"
	}
	return a[0] == "master" || (a[0] == "slave" && a[1] != "")
}

// reloadAll sends CLUSTER RELOAD to every node (each reads nodes.tsv and
// slots.tsv again).
func reloadAll(ctx context.Context, nodes []cluster.Node) error {
	var errs []error
	for _, n := range nodes {
		if _, err := nodeAuth.Do(ctx, n.Addr, 5*time.Second, "CLUSTER", "RELOAD"); err != nil {
			errs = append(errs, fmt.Errorf("CLUSTER RELOAD on %s: %w", n.ID, err))
		}
	}
	return errors.Join(errs...)
}
