package replica

import (
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/memrl/memrl/server"
)

// The reads of a collection move (docs/CLUSTER.md "Resharding"), and the
// registration of every move command.
//
//	MEMRL.DELTA <collection> <after> <upto> <max-bytes>
//	    source leader: the collection's commands in the raft log entries
//	    after index <after>, up to <upto> and to what this node has
//	    applied (so committed), at most about max-bytes of them:
//	    [last index read, [[index, sub, at-ns, [name, args...]], ...]].
//	    A transaction entry is one command (EXEC ...), given whole if
//	    every keyed command in it is the collection's; one that also
//	    writes another collection is refused (a transaction is in one
//	    slot, but moving collections one at a time cannot split it).
//	    "compacted" if the log no longer holds <after>+1: the mover
//	    starts again from a new export.
//	MEMRL.MOVES
//	    a linearizable read of this shard's move records (cmdMoves).
//
// Both answer on the shard's leader only (TRYAGAIN elsewhere).

// deltaMaxEntries bounds the log entries one MEMRL.DELTA reads.
const deltaMaxEntries = 8192

// registerMoveCommands registers the move commands on s.
func (n *Node) registerMoveCommands(s *server.Server) {
	applyOnly := func(c *server.Ctx, args [][]byte) error { return errApplyOnly }
	s.Register("MEMRL.EXPORT", 2, n.cmdExport)
	s.Register("MEMRL.EXPORTREAD", 3, n.cmdExportRead, server.ReadOnly)
	s.Register("MEMRL.EXPORTDONE", 1, n.cmdExportDone, server.Local)
	s.Register("MEMRL.IMPORT", 3, n.cmdImport)
	s.Register("MEMRL.IMPORTREADY", 1, n.cmdImportReady, server.Local)
	s.Register("MEMRL.REPLAY", 2, applyOnly)
	s.Register("MEMRL.PAUSE", 2, applyOnly)
	s.Register("MEMRL.UNPAUSE", 2, applyOnly)
	s.Register("MEMRL.FINISH", 2, applyOnly)
	s.Register("MEMRL.DELTA", 4, n.cmdDelta, server.ReadOnly)
	s.Register("MEMRL.MOVES", 0, n.cmdMoves, server.ReadOnly)
}

// deltaCmd is one command of the delta.
type deltaCmd struct {
	index, sub uint64
	at         int64
	cmd        [][]byte
}

// cmdDelta is MEMRL.DELTA.
func (n *Node) cmdDelta(c *server.Ctx, args [][]byte) error {
	if len(args) != 4 {
		return c.WrongArity()
	}
	name := string(args[0])
	after, e1 := strconv.ParseUint(string(args[1]), 10, 64)
	upto, e2 := strconv.ParseUint(string(args[2]), 10, 64)
	maxBytes, e3 := strconv.Atoi(string(args[3]))
	if e1 != nil || e2 != nil || e3 != nil || maxBytes < 1 {
		return server.NewError("MEMRL.DELTA <collection> <after> <upto> <max-bytes>")
	}
	// The leader only: a follower would answer from an older state
	// (READONLY's rule), and the mover must see what is committed.
	if !n.IsLeader() {
		return n.notLeader()
	}
	if err := n.BeforeRead(c); err != nil {
		return err
	}
	upto = min(upto, n.AppliedIndex())
	first, err := n.store.FirstIndex()
	if err != nil {
		return server.NewError("MEMRL.DELTA: " + err.Error())
	}
	if after < upto && after+1 < first {
		return server.NewError("MEMRL.DELTA: compacted: the raft log starts at " + strconv.FormatUint(first, 10) +
			", after index " + strconv.FormatUint(after+1, 10) + " (start the move again from a new export)")
	}
	var out []deltaCmd
	size, last := 0, after
	for i := after + 1; i <= upto && i-after <= deltaMaxEntries && size < maxBytes; i++ {
		var l raft.Log
		if err := n.store.GetLog(i, &l); err != nil {
			return server.NewError("MEMRL.DELTA: compacted: log entry " + strconv.FormatUint(i, 10) + ": " + err.Error())
		}
		last = i
		if l.Type != raft.LogCommand {
			continue
		}
		b, _, err := decodeLog(l.Data)
		if err != nil {
			continue // applied as nothing (fsm.go)
		}
		for j, cmd := range b.Cmds {
			mine, other := touches(name, cmd)
			if other && mine {
				return server.NewError("MEMRL.DELTA: entry " + strconv.FormatUint(i, 10) + " is a transaction writing " + name + " and another collection; move the collections of a slot together is not built (move it when it is idle)")
			}
			if mine {
				out = append(out, deltaCmd{i, uint64(j), b.At, cmd})
				for _, a := range cmd {
					size += len(a) + 16
				}
			}
		}
	}
	c.WriteArrayHeader(2)
	c.WriteInt(int64(last))
	c.WriteArrayHeader(len(out))
	for _, d := range out {
		c.WriteArrayHeader(4)
		c.WriteInt(int64(d.index))
		c.WriteInt(int64(d.sub))
		c.WriteInt(d.at)
		c.WriteArrayHeader(len(d.cmd))
		for _, a := range d.cmd {
			c.WriteBulk(a)
		}
	}
	return nil
}

// touches reports whether cmd (or a transaction's commands) has name as
// its key (mine), and another key (other).
func touches(name string, cmd [][]byte) (mine, other bool) {
	cmds := [][][]byte{cmd}
	if inner, ok := server.DecodeExec(cmd); ok {
		cmds = inner
	}
	for _, c := range cmds {
		if len(c) > 0 && strings.HasPrefix(strings.ToLower(string(c[0])), "memrl.") {
			continue // the move's own entries
		}
		if k, ok := server.CommandKey(c); ok {
			if string(k) == name {
				mine = true
			} else {
				other = true
			}
		}
	}
	return mine, other
}

// cmdMoves is MEMRL.MOVES: every move record of this shard, each
// [kind, collection, move id, state, index]: kind "paused" (a source's
// pause; state "", index P) or "import" (a target's import; its state,
// and the seal index).
func (n *Node) cmdMoves(c *server.Ctx, args [][]byte) error {
	if len(args) != 0 {
		return c.WrongArity()
	}
	if !n.IsLeader() {
		return n.notLeader()
	}
	if err := n.BeforeRead(c); err != nil {
		return err
	}
	db := n.DB()
	type rec struct {
		kind, name, id, state string
		index                 uint64
	}
	var out []rec
	n.moves.mu.Lock()
	t, err := n.moves.tablesLocked(db)
	if err == nil {
		for name, p := range t.paused {
			out = append(out, rec{"paused", name, p.moveID, "", p.index})
		}
		for name, r := range t.imports {
			out = append(out, rec{"import", name, r.moveID, r.state, r.seal})
		}
	}
	n.moves.mu.Unlock()
	if err != nil {
		return err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].kind+out[i].name < out[j].kind+out[j].name })
	c.WriteArrayHeader(len(out))
	for _, r := range out {
		c.WriteArrayHeader(5)
		c.WriteBulkString(r.kind)
		c.WriteBulkString(r.name)
		c.WriteBulkString(r.id)
		c.WriteBulkString(r.state)
		c.WriteInt(int64(r.index))
	}
	return nil
}
