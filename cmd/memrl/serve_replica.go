package main

import (
	"flag"
	"log/slog"
	"sync/atomic"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/replica"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// Replication in cluster mode (docs/CLUSTER.md "Replication"): the nodes
// of this node's shard in the nodes file (--cluster-nodes, read by
// clusterFlags in serve_cluster.go) form one raft group, and this process
// is one of its replicas (package replica). The engine then lives under
// --dir's fsm/ and is rebuilt from the raft snapshot and log at every
// start, so it runs without fsyncs of its own (wal.SyncNone; --sync does
// not apply): a write is acknowledged once a majority of the shard has
// fsynced it to its raft log (--dir's raft/raft.db).

// replicaFlags are the replication layer's own flags.
type replicaFlags struct {
	// join is --cluster-join: never bootstrap; wait to be added to the
	// shard's group with RAFT.ADD on its leader.
	join bool
}

func addReplicaFlags(fs *flag.FlagSet) *replicaFlags {
	f := &replicaFlags{}
	fs.BoolVar(&f.join, "cluster-join", false, "cluster mode: a node added at run time: do not bootstrap the shard's raft group; wait for RAFT.ADD on its leader")
	return f
}

// check validates the flags once the cluster flags are checked.
func (f *replicaFlags) check(c *clusterFlags) error {
	if f.join && !c.enabled() {
		return cliflag.Usagef("--cluster-join needs --cluster-nodes")
	}
	return nil
}

// openReplica opens this process's replica: the voters it bootstraps with
// (unless --cluster-join) are the nodes of its shard, each at its client
// address's raft address (cluster.RaftAddr: port + 10000). It registers
// the memory commands, RAFT.* and the replicator on srv, and makes the
// node the cluster state's source for its shard's leader.
func openReplica(f *replicaFlags, c *clusterFlags, o *serveOptions, eopts engine.Options, srv *server.Server, logger *slog.Logger) (*replica.Node, error) {
	nodes, err := cluster.ReadNodes(c.nodesFile)
	if err != nil {
		return nil, err
	}
	self := c.node
	var peers []replica.Peer // empty: no bootstrap
	for _, n := range nodes {
		if n.Shard == self.Shard && !f.join {
			peers = append(peers, replica.Peer{ID: n.ID, RaftAddr: cluster.RaftAddr(n.Addr)})
		}
	}
	eopts.Sync = wal.SyncNone // durability is the raft log's
	// The shard's slot states (CLUSTER SETSLOT) are replicated: applied
	// by every replica from the log, kept in its engine folder so that
	// a raft snapshot ships them, read back when one is installed. They
	// are registered before the group opens, since committed entries
	// may apply before the router is set.
	// cur is the engine entries apply to (set before any applies).
	var cur atomic.Pointer[engine.DB]
	c.slots = cluster.NewSlotStates()
	c.exists = func(name string) bool {
		_, err := cur.Load().Collection(name)
		return err == nil
	}
	srv.SetSlotStates(c.slots, self.Shard, c.exists)
	opened := func(db *engine.DB) error {
		if err := c.slots.Load(db.Dir()); err != nil {
			return err
		}
		cur.Store(db)
		return nil
	}
	node, err := replica.Open(replica.Config{ID: self.ID, Dir: o.dir, RaftAddr: cluster.RaftAddr(self.Addr),
		Peers: peers, Engine: eopts, Logger: logger, EngineOpened: opened}, srv)
	if err != nil {
		return nil, err
	}
	c.leader = node.Leader
	logger.Info("replica started", "node", self.ID, "shard", self.Shard, "raft_addr", cluster.RaftAddr(self.Addr), "voters", len(peers))
	return node, nil
}
