package replica

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/memrl/memrl/server"
)

// The entries of a collection move that apply other commands, handled by
// the state machine before the server's handlers (docs/CLUSTER.md
// "Resharding"):
//
//	MEMRL.REPLAY <collection> <count> then count × (<index> <sub> <at-ns> <argc> <args...>)
//	    target: applies the source's commands after the export's X, each
//	    at its original entry time (so the same ids, Q and timestamps),
//	    skipping any at or before the last one replayed (a resent
//	    replay changes nothing); replies how many it applied.
//	MEMRL.PAUSE <collection> <move id>
//	    source: from this entry on, writes to the collection are refused
//	    with TRYAGAIN (reads go on); replies the entry's index P.
//	MEMRL.UNPAUSE <collection> <move id>
//	    source: ends the pause (a move rolled back).
//	MEMRL.FINISH <collection> <move id>
//	    source: drops the paused collection and ends its pause, in one
//	    entry: from then on its writes get ASK to the target.
//	MEMRL.IMPORT DISCARD <collection> <move id>
//	    target: rolls the import back (move_import.go).
//
// The pause is enforced here, as each replica applies each entry: a write
// committed after PAUSE is refused by every replica alike, whenever it
// was routed.

// applyCmd applies one command of a committed entry at index (the
// entry's clock already set) and returns its reply.
func (n *Node) applyCmd(a *server.Applier, cmd [][]byte) []byte {
	if len(cmd) > 0 && len(cmd[0]) > 6 && bytes.EqualFold(cmd[0][:6], []byte("memrl.")) {
		switch strings.ToLower(string(cmd[0])) {
		case "memrl.replay":
			return n.applyReplay(a, cmd[1:])
		case "memrl.finish":
			return n.applyFinish(a, cmd[1:])
		case "memrl.pause":
			return n.applyPause(cmd[1:], true)
		case "memrl.unpause":
			return n.applyPause(cmd[1:], false)
		case "memrl.import":
			if len(cmd) == 4 && strings.EqualFold(string(cmd[1]), "discard") {
				return n.applyDiscard(a, string(cmd[2]), string(cmd[3]))
			}
		}
	}
	if !n.moves.quiet(n.DB()) && n.pausedWrite(cmd) {
		return tryAgainReply("the collection is being moved to another shard (its writes pause for a moment); the command was not applied, retry")
	}
	return a.Apply(cmd)
}

// pausedWrite reports whether cmd (or a command of a transaction entry)
// writes to a paused collection.
func (n *Node) pausedWrite(cmd [][]byte) bool {
	n.moves.mu.Lock()
	defer n.moves.mu.Unlock()
	t, err := n.moves.tablesLocked(n.DB())
	if err != nil || len(t.paused) == 0 {
		return false
	}
	if inner, ok := server.DecodeExec(cmd); ok {
		for _, c := range inner {
			if k, ok := server.CommandKey(c); ok {
				if _, p := t.paused[string(k)]; p {
					return true
				}
			}
		}
		return false
	}
	if k, ok := server.CommandKey(cmd); ok {
		_, p := t.paused[string(k)]
		return p
	}
	return false
}

// applyPause is MEMRL.PAUSE (on) and MEMRL.UNPAUSE.
func (n *Node) applyPause(args [][]byte, on bool) []byte {
	if len(args) != 2 || !validMoveID(string(args[1])) {
		return errReply("ERR MEMRL.PAUSE|UNPAUSE <collection> <move id>")
	}
	name, id := string(args[0]), string(args[1])
	db := n.DB()
	n.moves.mu.Lock()
	defer n.moves.mu.Unlock()
	t, err := n.moves.tablesLocked(db)
	if err != nil {
		return errReply("ERR " + err.Error())
	}
	var p uint64
	if on {
		if r, ok := t.paused[name]; ok && r.moveID == id {
			return intReply(int64(r.index)) // a repeated PAUSE
		}
		if _, err := db.Collection(name); err != nil {
			return errReply("ERR MEMRL.PAUSE: " + err.Error())
		}
		p = n.applyIndex.Load()
		t.paused[name] = pauseRec{moveID: id, index: p}
	} else {
		if r, ok := t.paused[name]; !ok || r.moveID != id {
			return okReply()
		}
		delete(t.paused, name)
	}
	if err := n.saveMovesLocked(); err != nil {
		return errReply("ERR " + err.Error())
	}
	if on {
		return intReply(int64(p))
	}
	return okReply()
}

// saveMovesLocked writes the move state and updates what quiet reads.
// REQUIRES: n.moves.mu held, the state read from n.DB().
func (n *Node) saveMovesLocked() error {
	n.moves.changedLocked()
	if err := n.moves.saveLocked(n.moves.db); err != nil {
		// Applied in memory, not on disk: this replica would ship a
		// snapshot that differs from the others'. Stop, as for a
		// failed engine log (fsm.go).
		n.fatal(err)
		return err
	}
	return nil
}

// applyFinish is MEMRL.FINISH: drop the paused collection, end the pause.
func (n *Node) applyFinish(a *server.Applier, args [][]byte) []byte {
	if len(args) != 2 {
		return errReply("ERR MEMRL.FINISH <collection> <move id>")
	}
	name, id := string(args[0]), string(args[1])
	r, ok, err := lookupMove(&n.moves, n.DB(), pausedTable, name)
	if err != nil {
		return errReply("ERR " + err.Error())
	}
	if !ok || r.moveID != id {
		return errReply("ERR MEMRL.FINISH: " + name + " is not paused by move " + id)
	}
	reply := a.Apply([][]byte{[]byte("MEM.DROP"), []byte(name)})
	n.moves.mu.Lock()
	defer n.moves.mu.Unlock()
	delete(n.moves.t.paused, name)
	if err := n.saveMovesLocked(); err != nil {
		return errReply("ERR " + err.Error())
	}
	return reply
}

// applyDiscard is MEMRL.IMPORT DISCARD: roll back an unfinished import.
func (n *Node) applyDiscard(a *server.Applier, name, id string) []byte {
	db := n.DB()
	r, ok, err := lookupMove(&n.moves, db, importsTable, name)
	if err != nil {
		return errReply("ERR " + err.Error())
	}
	if !ok || r.moveID != id {
		return okReply() // nothing of this move here
	}
	if r.state == importStaging {
		n.preps.drop(id)
		os.Remove(stagePath(db, id))
	} else if _, err := db.Collection(name); err == nil {
		if reply := a.Apply([][]byte{[]byte("MEM.DROP"), []byte(name)}); bytes.HasPrefix(reply, []byte("-")) {
			return reply
		}
	}
	n.moves.mu.Lock()
	defer n.moves.mu.Unlock()
	delete(n.moves.t.imports, name)
	if err := n.saveMovesLocked(); err != nil {
		return errReply("ERR " + err.Error())
	}
	return okReply()
}

// applyReplay is MEMRL.REPLAY (see above).
func (n *Node) applyReplay(a *server.Applier, args [][]byte) []byte {
	if len(args) < 2 {
		return errReply("ERR " + errReplayFormat.Msg)
	}
	name := string(args[0])
	count, err := strconv.ParseUint(string(args[1]), 10, 32)
	if err != nil {
		return errReply("ERR " + errReplayFormat.Msg)
	}
	type replayed struct {
		pos replayPos
		at  int64
		cmd [][]byte
	}
	cmds := make([]replayed, 0, min(count, 4096))
	rest := args[2:]
	for range count {
		if len(rest) < 4 {
			return errReply("ERR " + errReplayFormat.Msg)
		}
		idx, e1 := strconv.ParseUint(string(rest[0]), 10, 64)
		sub, e2 := strconv.ParseUint(string(rest[1]), 10, 64)
		at, e3 := strconv.ParseInt(string(rest[2]), 10, 64)
		argc, e4 := strconv.Atoi(string(rest[3]))
		if e1 != nil || e2 != nil || e3 != nil || e4 != nil || argc < 1 || argc > len(rest)-4 {
			return errReply("ERR " + errReplayFormat.Msg)
		}
		cmds = append(cmds, replayed{replayPos{idx, sub}, at, rest[4 : 4+argc]})
		rest = rest[4+argc:]
	}
	if len(rest) != 0 {
		return errReply("ERR " + errReplayFormat.Msg)
	}
	r, ok, err := lookupMove(&n.moves, n.DB(), importsTable, name)
	if err != nil {
		return errReply("ERR " + err.Error())
	}
	if !ok || r.state != importCommitted {
		return errReply("ERR MEMRL.REPLAY: " + name + " is not being imported here (or is sealed)")
	}
	entryClock := n.clock.Load()
	applied := 0
	for _, c := range cmds {
		if !c.pos.after(r.pos) {
			continue // replayed already
		}
		if !replayable(name, c.cmd) {
			return errReply("ERR MEMRL.REPLAY: a command for another collection")
		}
		n.clock.Store(c.at)
		a.Apply(c.cmd)
		r.pos = c.pos
		applied++
	}
	n.clock.Store(entryClock)
	n.moves.mu.Lock()
	defer n.moves.mu.Unlock()
	n.moves.t.imports[name] = r
	if err := n.saveMovesLocked(); err != nil {
		return errReply("ERR " + err.Error())
	}
	return intReply(int64(applied))
}

// replayable reports whether cmd is a command for collection name alone:
// its key is name, or it is a transaction whose keyed commands all are.
func replayable(name string, cmd [][]byte) bool {
	if inner, ok := server.DecodeExec(cmd); ok {
		for _, c := range inner {
			if k, ok := server.CommandKey(c); ok && string(k) != name {
				return false
			}
		}
		return true
	}
	k, ok := server.CommandKey(cmd)
	return ok && string(k) == name
}

func intReply(v int64) []byte { return []byte(":" + strconv.FormatInt(v, 10) + "\r\n") }
func okReply() []byte         { return []byte("+OK\r\n") }

// tryAgainReply is "-TRYAGAIN msg".
func tryAgainReply(msg string) []byte {
	var b bytes.Buffer
	w := server.NewWriter(&b)
	w.WriteErrorCode("TRYAGAIN", msg)
	w.Flush()
	return b.Bytes()
}
