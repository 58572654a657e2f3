package server

import (
	"strconv"

	"github.com/memrl/memrl/cluster"
)

// The apply-time slot guard (docs/CLUSTER.md "Resharding").
//
// The router decides where a command is served before it is proposed;
// a command routed just before a CLUSTER SETSLOT may still be committed
// after it, in the raft log. So each replica checks again as it applies a
// write, against the shard's replicated slot states, which are in the
// state the log gives them at that entry: a write for a slot whose owner
// SETSLOT NODE made another shard, or for a collection this shard does
// not have in a slot it is MIGRATING, is refused (MOVED or ASK), and
// changes nothing. The check reads only replicated state (the slot table,
// the engine's collections), so every replica refuses the same entries;
// only the redirect's address, which the leader's client reads, may
// differ between replicas.

// slotGuard is what the guard needs: the table, this node's shard, and a
// look-up of this node's collections.
type slotGuard struct {
	slots  *cluster.SlotStates
	shard  int
	exists func(name string) bool
}

// SetSlotStates makes ss the table MEMRL.SETSLOT applies to, and turns on
// the apply-time guard for this node of shard (exists: whether the
// engine has a collection). A replica calls it before it opens its raft
// group, since committed entries apply before the cluster router is set;
// the ClusterRouter must be given the same table. Without it, the
// ClusterRouter's table takes SETSLOT and no apply-time guard runs (a
// node without replication applies nothing from a log).
func (s *Server) SetSlotStates(ss *cluster.SlotStates, shard int, exists func(name string) bool) {
	s.guard.Store(&slotGuard{slots: ss, shard: shard, exists: exists})
	s.slots.Store(ss)
}

// slotGuard returns the error that refuses applying write cmd (args with
// the name) on this replica, or nil.
func (s *Server) slotGuard(cmd *command, args [][]byte) error {
	g := s.guard.Load()
	if g == nil || cmd.flags&ReadOnly != 0 {
		return nil
	}
	key, ok := commandKey(cmd, args[1:])
	if !ok {
		return nil
	}
	slot := cluster.HashSlot(key)
	if owner, ok := g.slots.Owner(slot); ok && owner != g.shard {
		return s.slotRedirect(slot, owner, "MOVED")
	}
	if m := g.slots.Migration(slot); m.Mode == cluster.SlotMigrating && !g.exists(string(key)) {
		return s.slotRedirect(slot, m.Shard, "ASK")
	}
	return nil
}

// slotRedirect is the router's redirect, or TRYAGAIN before the router
// is set (a replica applying its log at start: nobody reads the reply).
func (s *Server) slotRedirect(slot, shard int, code string) error {
	if cr := s.clusterRouter(); cr != nil {
		return cr.redirect(slot, shard, code)
	}
	return &ReplyError{Code: "TRYAGAIN", Msg: "hash slot " + strconv.Itoa(slot) + " is served by shard " + strconv.Itoa(shard)}
}
