package server

import (
	"strconv"
	"strings"

	"github.com/memrl/memrl/cluster"
)

// CLUSTER SETSLOT (docs/CLUSTER.md "Resharding"):
//
//	CLUSTER SETSLOT <slot> MIGRATING <target-shard>
//	CLUSTER SETSLOT <slot> IMPORTING <source-shard>
//	CLUSTER SETSLOT <slot> NODE <shard>
//	CLUSTER SETSLOT <slot> STABLE
//
// Redis names nodes; memrl names shards, since a shard's leader changes
// and the state belongs to the shard's raft group. The leader checks the
// request against what it knows (MIGRATING: the slot is this shard's;
// IMPORTING: it is not) and proposes it as the replicated command
// MEMRL.SETSLOT, which every replica of the shard applies in log order
// (cluster.SlotStates.Set): so the state survives a failover and, kept
// in the engine's folder that the raft snapshot ships, a restart.

// errSetSlotSyntax: CLUSTER SETSLOT's arguments.
var errSetSlotSyntax = NewError("CLUSTER SETSLOT <slot> MIGRATING|IMPORTING|NODE <shard> | STABLE")

// errSetSlotInTx: SETSLOT waits for raft, which may wait for the
// transaction lock EXEC holds.
var errSetSlotInTx = NewError("CLUSTER SETSLOT cannot run inside MULTI/EXEC; send it on its own")

// registerSetSlot registers MEMRL.SETSLOT, the replicated form of CLUSTER
// SETSLOT. It is a write (proposed through raft when replicated); a
// client may send it, but CLUSTER SETSLOT is the checked way.
func (s *Server) registerSetSlot() {
	s.Register("memrl.setslot", 2, cmdApplySetSlot)
}

// setSlotArgs is a parsed SETSLOT.
type setSlotArgs struct {
	slot  int
	mode  cluster.SlotMode
	shard int // the other shard (MIGRATING, IMPORTING) or the owner (NODE); -1 for STABLE
	node  bool
}

// parseSetSlot parses slot, mode word and (but for STABLE) shard.
func parseSetSlot(args [][]byte) (setSlotArgs, error) {
	if len(args) < 2 {
		return setSlotArgs{}, errSetSlotSyntax
	}
	slot, ok := parseSlot(args[0])
	if !ok {
		return setSlotArgs{}, NewError("Invalid or out of range slot")
	}
	a := setSlotArgs{slot: slot, shard: -1}
	word := strings.ToLower(string(args[1]))
	if word == "stable" {
		if len(args) != 2 {
			return setSlotArgs{}, errSetSlotSyntax
		}
		return a, nil
	}
	if len(args) != 3 {
		return setSlotArgs{}, errSetSlotSyntax
	}
	switch word {
	case "migrating":
		a.mode = cluster.SlotMigrating
	case "importing":
		a.mode = cluster.SlotImporting
	case "node":
		a.node = true
	default:
		return setSlotArgs{}, errSetSlotSyntax
	}
	n, ok := parseInt(args[2])
	if !ok || n < 0 || n >= cluster.NumSlots {
		return setSlotArgs{}, NewError("Invalid shard " + strconv.Quote(string(args[2])))
	}
	a.shard = int(n)
	return a, nil
}

// clusterSetSlot is CLUSTER SETSLOT (args after "setslot"): checked here,
// then proposed as MEMRL.SETSLOT (run here when nothing replicates).
func clusterSetSlot(c *Ctx, cr *ClusterRouter, args [][]byte) error {
	if u := c.conn.user; u != nil && u.ReadOnly {
		return errNoPerm(u.Name, "cluster|setslot")
	}
	if c.InTransaction() {
		return errSetSlotInTx
	}
	a, err := parseSetSlot(args)
	if err != nil {
		return err
	}
	st := cr.State()
	self := st.Self().Shard
	if a.shard >= st.Topology().Shards {
		return NewError("Unknown shard " + strconv.Itoa(a.shard) + " (the nodes file names " + strconv.Itoa(st.Topology().Shards) + ")")
	}
	owner := cr.owner(a.slot)
	switch {
	case a.mode == cluster.SlotMigrating && owner != self:
		return NewError("I'm not the owner of hash slot " + strconv.Itoa(a.slot) + " (shard " + strconv.Itoa(owner) + " is)")
	case a.mode == cluster.SlotImporting && owner == self:
		return NewError("I'm already the owner of hash slot " + strconv.Itoa(a.slot))
	case a.mode != cluster.SlotStable && a.shard == self:
		return NewError("Target shard " + strconv.Itoa(a.shard) + " is this shard")
	}
	cmd := c.Server().lookup([]byte("memrl.setslot"))
	full := make([][]byte, 0, 4)
	full = append(full, []byte("memrl.setslot"))
	full = append(full, args...)
	return c.conn.call(cmd, full)
}

// MEMRL.SETSLOT slot MIGRATING|IMPORTING|NODE shard | STABLE: applies a
// CLUSTER SETSLOT on this replica. Its checks depend only on its
// arguments, so that every replica applying the entry does the same.
func cmdApplySetSlot(c *Ctx, args [][]byte) error {
	ss := c.Server().slots.Load()
	if ss == nil {
		return errClusterDisabled
	}
	a, err := parseSetSlot(args)
	if err != nil {
		return err
	}
	node := -1
	if a.node {
		node = a.shard
	}
	if err := ss.Set(a.slot, a.mode, a.shard, node); err != nil {
		c.Server().log.Error("cluster: SETSLOT not applied on this node", "slot", a.slot, "err", err)
		return NewError("CLUSTER SETSLOT: " + err.Error())
	}
	c.WriteOK()
	return nil
}
