package server

import (
	"slices"
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
	if cr, ok := r.(*ClusterRouter); ok {
		s.slots.CompareAndSwap(nil, cr.cfg.Slots)
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

// ClusterConfig configures a ClusterRouter.
type ClusterConfig struct {
	// State is the cluster as this node knows it.
	State *cluster.State
	// Collections lists this node's collections (engine.DB.List), for
	// CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT. Nil: none.
	Collections func() []string
	// Exists reports whether this node has the collection name; a
	// migrating slot's commands for a collection it lacks are sent to
	// the target with -ASK. Nil: looked up in Collections.
	Exists func(name string) bool
	// Slots is this shard's replicated slot-state table (CLUSTER
	// SETSLOT). Nil: an empty table kept in memory only. It must be
	// the table given to Server.SetSlotStates, if any.
	Slots *cluster.SlotStates
}

// ClusterRouter is the Router of cluster mode: a command's collection
// name gives its slot (cluster.HashSlot), the slot map its shard (an
// owner set by CLUSTER SETSLOT NODE overrides slots.tsv), and the
// shard's current leader serves it. It answers:
//
//   - keyless commands: served here;
//   - a slot of this node's shard: served here if this node leads the
//     shard, or if the command is a read and the connection sent
//     READONLY; otherwise MOVED to the leader; but when the slot is
//     MIGRATING and this node lacks the collection (moved already, or
//     not yet created), ASK to the target shard's leader;
//   - a slot of another shard that this shard is IMPORTING: served here
//     if the command follows ASKING and this node leads its shard;
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
	if cfg.Exists == nil {
		list := cfg.Collections
		cfg.Exists = func(name string) bool { return slices.Contains(list(), name) }
	}
	if cfg.Slots == nil {
		cfg.Slots = cluster.NewSlotStates()
	}
	return &ClusterRouter{cfg: cfg}
}

// State returns the cluster state the router reads.
func (r *ClusterRouter) State() *cluster.State { return r.cfg.State }

// SlotStates returns the shard's slot-state table the router reads.
func (r *ClusterRouter) SlotStates() *cluster.SlotStates { return r.cfg.Slots }

// owner returns the shard that owns slot: SETSLOT NODE's, else slots.tsv's.
func (r *ClusterRouter) owner(slot int) int {
	if s, ok := r.cfg.Slots.Owner(slot); ok {
		return s
	}
	return int(r.cfg.State.Topology().Slots[slot])
}

// Route implements Router.
func (r *ClusterRouter) Route(c *Ctx, name string, args [][]byte, write bool) error {
	asking := c.takeAsking(name)
	ks := keySpecOf(name)
	if ks.first == 0 || len(args) < ks.first {
		return nil
	}
	key := args[ks.first-1]
	slot := cluster.HashSlot(key)
	st := r.cfg.State
	shard := r.owner(slot)
	self := st.Self().Shard
	if shard == self {
		if (!write && c.ReadOnlyReads()) || st.IsLeader() {
			if m := r.cfg.Slots.Migration(slot); m.Mode == cluster.SlotMigrating && !r.cfg.Exists(string(key)) {
				return r.redirect(slot, m.Shard, "ASK")
			}
			return nil
		}
	} else if asking && st.IsLeader() && r.cfg.Slots.Migration(slot).Mode == cluster.SlotImporting {
		return nil
	}
	return r.redirect(slot, shard, "MOVED")
}

// redirect is "-MOVED|ASK slot leader-of-shard", or CLUSTERDOWN while the
// shard has no known leader.
func (r *ClusterRouter) redirect(slot, shard int, code string) error {
	leader, ok := r.cfg.State.Leader(shard)
	if !ok {
		return &ReplyError{Code: "CLUSTERDOWN", Msg: "Hash slot " + strconv.Itoa(slot) +
			" is served by shard " + strconv.Itoa(shard) + ", which has no leader now; retry"}
	}
	return &ReplyError{Code: code, Msg: strconv.Itoa(slot) + " " + leader.Addr}
}

// takeAsking reports whether the connection sent ASKING just before this
// command, and clears it: ASKING admits one command (ASKING itself does
// not consume it, so that ASKING twice is ASKING once).
// REQUIRES: called by the connection's goroutine.
func (c *Ctx) takeAsking(name string) bool {
	if c == nil || name == "asking" { // nil: a caller without a connection (BenchmarkClusterRoute)
		return false
	}
	a := c.conn.asking
	c.conn.asking = false
	return a
}
