package main

import (
	"bufio"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/replica"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// Replication in cluster mode (docs/CLUSTER.md "Replication"): the nodes
// of this node's shard in the nodes file form one raft group, and this
// process is one of its replicas (package replica). The engine then lives
// under --dir's fsm/ and is rebuilt from the raft snapshot and log at
// every start, so it runs without fsyncs of its own (wal.SyncNone; --sync
// does not apply): a write is acknowledged once a majority of the shard
// has fsynced it to its raft log (--dir's raft/raft.db).

// replicaFlags are --cluster-nodes and --node-id as the replication half
// reads them. NOTE for the merge: the routing half defines the same two
// flags (clusterFlags, serve_cluster.go); keep one definition and have
// openReplica read it.
type replicaFlags struct {
	nodesFile string // --cluster-nodes
	nodeID    string // --node-id
	// join is --cluster-join: never bootstrap; wait to be added to the
	// shard's group with RAFT.ADD on its leader.
	join bool
}

func addReplicaFlags(fs *flag.FlagSet) *replicaFlags {
	f := &replicaFlags{}
	fs.StringVar(&f.nodesFile, "cluster-nodes", "", "cluster mode: the cluster's nodes file (id, client address, shard, pid a line); needs --node-id")
	fs.StringVar(&f.nodeID, "node-id", "", "cluster mode: this node's id in the --cluster-nodes file")
	fs.BoolVar(&f.join, "cluster-join", false, "cluster mode: a node added at run time: do not bootstrap the shard's raft group; wait for RAFT.ADD on its leader")
	return f
}

func (f *replicaFlags) enabled() bool { return f.nodesFile != "" }

// check validates the flags once parsed and, in cluster mode, makes this
// node's client address (from the nodes file) the server's.
func (f *replicaFlags) check(o *serveOptions) error {
	if !f.enabled() {
		if f.nodeID != "" || f.join {
			return cliflag.Usagef("--node-id and --cluster-join need --cluster-nodes")
		}
		return nil
	}
	if f.nodeID == "" {
		return cliflag.Usagef("--cluster-nodes needs --node-id")
	}
	nodes, err := readNodeLines(f.nodesFile)
	if err != nil {
		return cliflag.Usagef("--cluster-nodes: %v", err)
	}
	for _, n := range nodes {
		if n.id == f.nodeID {
			o.addr, o.cfg.Addr = n.addr, n.addr
			return nil
		}
	}
	return cliflag.Usagef("--node-id %q is not in %s", f.nodeID, f.nodesFile)
}

// nodeLine is one line of the nodes file.
type nodeLine struct {
	id, addr string
	shard    int
}

// readNodeLines reads the nodes file: tab-separated id, client address,
// shard and pid a line; '#' lines and blank lines are skipped. (Package
// cluster's ReadNodes, once merged, checks more: use it.)
func readNodeLines(path string) ([]nodeLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []nodeLine
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 3 {
			return nil, fmt.Errorf("%s line %d: want id, address, shard and pid separated by tabs", path, ln)
		}
		shard, err := strconv.Atoi(cols[2])
		if err != nil || shard < 0 {
			return nil, fmt.Errorf("%s line %d: bad shard %q", path, ln, cols[2])
		}
		if replica.RaftAddr(cols[1]) == "" {
			return nil, fmt.Errorf("%s line %d: bad address %q (host:port, port at most 55535)", path, ln, cols[1])
		}
		out = append(out, nodeLine{id: cols[0], addr: cols[1], shard: shard})
	}
	return out, sc.Err()
}

// openReplica opens this process's replica: the voters it bootstraps with
// are the nodes of its shard, each at its client address's raft address
// (port + 10000). It registers the memory commands, RAFT.* and the
// replicator on srv.
func openReplica(f *replicaFlags, o *serveOptions, eopts engine.Options, srv *server.Server, logger *slog.Logger) (*replica.Node, error) {
	nodes, err := readNodeLines(f.nodesFile)
	if err != nil {
		return nil, err
	}
	var self nodeLine
	for _, n := range nodes {
		if n.id == f.nodeID {
			self = n
		}
	}
	var peers []replica.Peer // empty: no bootstrap
	for _, n := range nodes {
		if n.shard == self.shard && !f.join {
			peers = append(peers, replica.Peer{ID: n.id, RaftAddr: replica.RaftAddr(n.addr)})
		}
	}
	eopts.Sync = wal.SyncNone // durability is the raft log's
	node, err := replica.Open(replica.Config{ID: f.nodeID, Dir: o.dir, RaftAddr: replica.RaftAddr(self.addr),
		Peers: peers, Engine: eopts, Logger: logger}, srv)
	if err != nil {
		return nil, err
	}
	logger.Info("replica started", "node", f.nodeID, "shard", self.shard, "raft_addr", replica.RaftAddr(self.addr), "voters", len(peers))
	return node, nil
}
