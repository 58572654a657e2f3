package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/memrl/memrl/cluster"
	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/server"
)

// clusterFlags are memrl serve's cluster-mode flags (docs/CLUSTER.md).
// Without --cluster-nodes the server is standalone, exactly as before.
type clusterFlags struct {
	// nodesFile is --cluster-nodes: the cluster's nodes file; set, it
	// enables cluster mode.
	nodesFile string
	// nodeID is --node-id: this node's line in the nodes file.
	nodeID string
	// node is this node's line, read by check.
	node cluster.Node

	// leader, if set before start, reports the leader of this node's
	// shard (the replication layer sets it: replica.Node.Leader). Nil:
	// this node always leads its shard, which start allows only for a
	// shard of one node (needsReplication).
	leader func() (id string, ok bool)
	// auth is what this node sends other nodes' client ports (set with
	// leader by the replication layer: replicaFlags.clientAuth).
	auth cluster.Auth
	// slots and exists, if set before start (the replication layer sets
	// them), are the shard's replicated slot states and a look-up of
	// this node's collections, for the router. Nil: an in-memory table,
	// and a look-up in the collections' list.
	slots  *cluster.SlotStates
	exists func(name string) bool
}

// addClusterFlags defines the cluster-mode flags on fs.
func addClusterFlags(fs *flag.FlagSet) *clusterFlags {
	f := &clusterFlags{}
	fs.StringVar(&f.nodesFile, "cluster-nodes", "", "cluster mode: the cluster's nodes file (DIR/nodes.tsv, as memrl cluster start writes it); needs --node-id")
	fs.StringVar(&f.nodeID, "node-id", "", "cluster mode: this node's id in the --cluster-nodes file")
	return f
}

// enabled reports whether the server runs in cluster mode.
func (f *clusterFlags) enabled() bool { return f.nodesFile != "" }

// check validates the flags once parsed. In cluster mode it reads the
// nodes file and makes --addr this node's client address from it; an
// --addr given explicitly must agree with it. addrSet reports whether
// --addr was given.
func (f *clusterFlags) check(o *serveOptions, addrSet bool) error {
	if !f.enabled() {
		if f.nodeID != "" {
			return cliflag.Usagef("--node-id needs --cluster-nodes")
		}
		return nil
	}
	if f.nodeID == "" {
		return cliflag.Usagef("--cluster-nodes needs --node-id")
	}
	nodes, err := cluster.ReadNodes(f.nodesFile)
	if err != nil {
		return cliflag.Usagef("--cluster-nodes: %v", err)
	}
	found := false
	for _, n := range nodes {
		if n.ID == f.nodeID {
			f.node, found = n, true
		}
	}
	if !found {
		return cliflag.Usagef("--node-id %q is not in %s", f.nodeID, f.nodesFile)
	}
	if addrSet && o.addr != f.node.Addr {
		return cliflag.Usagef("--addr %s differs from node %s's address %s in %s", o.addr, f.nodeID, f.node.Addr, f.nodesFile)
	}
	o.addr, o.cfg.Addr = f.node.Addr, f.node.Addr
	return nil
}

// start puts srv in cluster mode: it loads the cluster state, routes
// commands with a ClusterRouter and starts polling the other shards'
// nodes. collections lists this node's collections (the engine's List;
// with replication, that of the replica's current engine). The returned
// func stops the polling. Standalone, it does nothing.
// REQUIRES: f.leader set first when the node is replicated.
func (f *clusterFlags) start(srv *server.Server, collections func() []string, logger *slog.Logger) (stop func(), err error) {
	if !f.enabled() {
		return func() {}, nil
	}
	st, err := cluster.NewState(cluster.Config{NodesPath: f.nodesFile, Self: f.nodeID, Leader: f.leader, Auth: f.auth})
	if err != nil {
		return nil, err
	}
	if err := needsReplication(st.Topology(), f.node.Shard, f.leader != nil); err != nil {
		return nil, err
	}
	srv.SetRouter(server.NewClusterRouter(server.ClusterConfig{State: st, Collections: collections, Exists: f.exists, Slots: f.slots}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.Run(ctx)
	}()
	t := st.Topology()
	logger.Info("cluster mode", "node", f.nodeID, "shard", f.node.Shard, "shards", t.Shards, "nodes", len(t.Nodes),
		"slots", fmt.Sprint(t.Slots.Ranges(f.node.Shard)))
	return func() {
		cancel()
		<-done
	}, nil
}

// errNoReplication refuses a shard of several nodes when nothing replicates
// them: each node would lead its shard alone and accept writes the others
// never see, so the shard's copies would silently diverge.
var errNoReplication = errors.New("cluster: shard has more than one node but no replication layer reports its leader")

// needsReplication returns errNoReplication if shard has more than one node
// in t and replicated is false.
func needsReplication(t *cluster.Topology, shard int, replicated bool) error {
	if n := len(t.ShardNodes(shard)); n > 1 && !replicated {
		return fmt.Errorf("%w (shard %d has %d nodes; run one node per shard, memrl cluster start --replicas 1, until replication is built in)", errNoReplication, shard, n)
	}
	return nil
}
