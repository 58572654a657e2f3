package server

import (
	"strconv"
	"strings"

	"github.com/memrl/memrl/cluster"
)

// Routing in cluster mode (docs/CLUSTER.md, "Sharding and routing").
//
// A Router, when one is set, sees every command before it runs, and every
// command as it is queued inside MULTI, and decides whether this node
// serves it. The server writes a Router's error verbatim, so a Router
// answers with Redis Cluster's redirects: "-MOVED <slot> <host:port>",
// "-ASK ...", "-CROSSSLOT ...", "-CLUSTERDOWN ...". A refusal while
// queuing marks the transaction (EXEC then answers -EXECABORT), as Redis
// does; at EXEC the queued commands are checked again together: keys in
// more than one slot give -CROSSSLOT and a slot no longer served here
// gives its redirect, and either discards the transaction.
//
// The key of a command is given by its key positions (keySpecOf), which
// COMMAND reports too, so that a cluster client computes the same slot the
// server checks.

// Router decides where a command is served in cluster mode.
type Router interface {
	// Route returns nil if this node serves the command, or the error to
	// send instead (a *ReplyError with code MOVED, ASK, CROSSSLOT or
	// CLUSTERDOWN). name is the command's lower-case name, args its
	// arguments after the name (valid only during the call), write is
	// false for a command flagged ReadOnly. c identifies the connection
	// (c.ReadOnlyReads reports READONLY). Route is called on the
	// connection's goroutine and must not block for long: it runs for
	// every command.
	Route(c *Ctx, name string, args [][]byte, write bool) error
}

// routerBox holds a Router in an atomic.Pointer (interfaces cannot be).
type routerBox struct{ r Router }

// SetRouter makes r decide where every later command is served (nil: serve
// everything here, as without a cluster). Call it before Serve; the
// CLUSTER, READONLY and ASKING commands answer as in a cluster only once
// a *ClusterRouter is set.
func (s *Server) SetRouter(r Router) {
	if r == nil {
		s.router.Store(nil)
		return
	}
	s.router.Store(&routerBox{r})
}

// clusterRouter returns the *ClusterRouter set, or nil (standalone).
func (s *Server) clusterRouter() *ClusterRouter {
	if b := s.router.Load(); b != nil {
		cr, _ := b.r.(*ClusterRouter)
		return cr
	}
	return nil
}

// ReadOnlyReads reports whether the connection sent READONLY (and not
// READWRITE since): its reads may then be served by any node of the
// shard that owns their slot, possibly stale.
func (c *Ctx) ReadOnlyReads() bool { return c.conn.readonly }

// keySpec is a command's key positions as COMMAND reports them: first and
// last key (1 = the first argument after the name; 0 = no key) and step.
type keySpec struct{ first, last, step int }

// keylessMem are the MEM.* commands without a collection argument.
var keylessMem = map[string]bool{"mem.list": true, "mem.checkpoint": true}

// keySpecOf returns the key positions of the command named name (lower
// case). Every MEM.* command's key is its collection name, its first
// argument, except MEM.LIST and MEM.CHECKPOINT, which have none; the
// rule is by prefix, not a list, so that a MEM.* command added later is
// routed by its collection unless it is made an exception here. Built-in
// commands have no keys.
func keySpecOf(name string) keySpec {
	if strings.HasPrefix(name, "mem.") && !keylessMem[name] {
		return keySpec{1, 1, 1}
	}
	return keySpec{}
}

// commandKey returns the key of a command (args after the name) and
// whether it has one.
func commandKey(cmd *command, args [][]byte) ([]byte, bool) {
	ks := keySpecOf(cmd.name)
	if ks.first == 0 || len(args) < ks.first {
		return nil, false
	}
	return args[ks.first-1], true
}

// route asks the router about a command about to run or be queued.
// args include the name.
func (c *conn) route(b *routerBox, cmd *command, args [][]byte) error {
	return b.r.Route(&c.hctx, cmd.name, args[1:], cmd.flags&ReadOnly == 0)
}

// routeTx checks a transaction about to be EXECed: its keyed commands must
// share one slot (else -CROSSSLOT) and each must still be served here.
// A non-nil error discards the transaction.
// REQUIRES: called by the connection's goroutine.
func (c *conn) routeTx(tx *txState) error {
	b := c.srv.router.Load()
	if b == nil {
		return nil
	}
	slot := -1
	for _, q := range tx.cmds {
		key, ok := commandKey(q.cmd, q.args[1:])
		if !ok {
			continue
		}
		s := cluster.HashSlot(key)
		if slot >= 0 && s != slot {
			return errCrossSlot
		}
		slot = s
	}
	for _, q := range tx.cmds {
		if err := c.route(b, q.cmd, q.args); err != nil {
			return err
		}
	}
	return nil
}

// Cluster errors, worded as Redis words them (clients match on the code).
var (
	// errCrossSlot refuses a transaction whose keys are in more than one
	// slot: its commands could not all run on one shard.
	errCrossSlot = &ReplyError{Code: "CROSSSLOT", Msg: "Keys in request don't hash to the same slot"}
	// errClusterDisabled answers the cluster commands on a standalone
	// server.
	errClusterDisabled = NewError("This instance has cluster support disabled")
)

// movedError is "-MOVED slot host:port".
func movedError(slot int, addr string) *ReplyError {
	return &ReplyError{Code: "MOVED", Msg: strconv.Itoa(slot) + " " + addr}
}

// ClusterConfig configures a ClusterRouter.
type ClusterConfig struct {
	// State is the cluster as this node knows it.
	State *cluster.State
	// Collections lists this node's collections (engine.DB.List), for
	// CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT. Nil: none.
	Collections func() []string
}

// ClusterRouter is the Router of cluster mode: a command's collection
// name gives its slot (cluster.HashSlot), the slot map its shard, and the
// shard's current leader serves it. It answers:
//
//   - keyless commands: served here;
//   - a slot of this node's shard: served here if this node leads the
//     shard, or if the command is a read and the connection sent
//     READONLY; otherwise MOVED to the leader;
//   - a slot of another shard: MOVED to that shard's leader;
//   - a shard whose leader is not known: CLUSTERDOWN (clients retry).
type ClusterRouter struct {
	cfg ClusterConfig
}

// NewClusterRouter returns a router for cfg. Register it with SetRouter.
func NewClusterRouter(cfg ClusterConfig) *ClusterRouter {
	if cfg.Collections == nil {
		cfg.Collections = func() []string { return nil }
	}
	return &ClusterRouter{cfg: cfg}
}

// State returns the cluster state the router reads.
func (r *ClusterRouter) State() *cluster.State { return r.cfg.State }

// Route implements Router.
func (r *ClusterRouter) Route(c *Ctx, name string, args [][]byte, write bool) error {
	ks := keySpecOf(name)
	if ks.first == 0 || len(args) < ks.first {
		return nil
	}
	slot := cluster.HashSlot(args[ks.first-1])
	st := r.cfg.State
	shard := int(st.Topology().Slots[slot])
	if shard == st.Self().Shard {
		if (!write && c.ReadOnlyReads()) || st.IsLeader() {
			return nil
		}
	}
	leader, ok := st.Leader(shard)
	if !ok {
		return &ReplyError{Code: "CLUSTERDOWN", Msg: "Hash slot " + strconv.Itoa(slot) +
			" is served by shard " + strconv.Itoa(shard) + ", which has no leader now; retry"}
	}
	return movedError(slot, leader.Addr)
}
