package server

import "github.com/memrl/memrl/engine"

// Crash atomicity of EXEC.
//
// EXEC runs its queued commands one by one, each logging its own records,
// so without more a crash in the middle keeps a durable prefix of the
// transaction ("MEM.DEL KEY k" without the "MEM.ADD … KEY k" after it).
// runTx (and applyTx, for a transaction replicated as one raft entry in
// cluster mode, on every node's own log) therefore opens an atomic group
// of the database's log
// (engine.DB.BeginGroup) over the collections the queued commands name
// before running them, and commits it after the last one, before the
// transaction lock is released: at replay the transaction's records are
// applied all or none. EXEC's reply waits for the commit record to be
// durable (Ctx.AfterDurable), so an acknowledged transaction survives a
// crash whole.
//
// A transaction holding a command that checkpoints (MEM.CHECKPOINT,
// MEM.COMPACT) runs without a group: a checkpoint waits until no group is
// open (it must not hold part of one), so inside its own transaction's
// group it would wait for itself. Such a transaction is not crash-atomic
// (docs/PROTOCOL.md, Transactions).

// txAtomic is the database hook for runTx and applyTx, set by
// RegisterMemFunc.
type txAtomic struct {
	// cur returns the database; nil when no database is registered.
	cur func() *engine.DB
	// wait is the durability wait of the MEM.* commands (Ctx.AfterDurable
	// takes one wait function per connection).
	wait func(uint64) error
}

// ungrouped are the commands a grouped transaction must not hold (see
// above).
var ungrouped = map[string]bool{"mem.checkpoint": true, "mem.compact": true}

// prepareTxGroup is the first half of the hook for a transaction of cmds
// (runTx's queued commands, or applyTx's replicated entry): called before the
// transaction lock is taken, it waits for a running checkpoint (a group
// cannot open during one, and the transaction lock, once held, holds up
// every command) and returns begin, which runTx calls with the lock held
// to open the group; begin returns commit, which runTx calls exactly once,
// with the lock still held, after the last queued command has run (or
// failed, or panicked).
// REQUIRES: called by the connection's goroutine in runTx, holding no
// lock; begin and commit on the same goroutine, holding the transaction
// lock and no engine lock.
func (cn *conn) prepareTxGroup(cmds []queuedCmd) (begin func() (commit func())) {
	noop := func() func() { return func() {} }
	a := cn.srv.atomicTx
	if a.cur == nil {
		return noop
	}
	var names []string
	seen := map[string]bool{}
	for _, q := range cmds {
		if q.cmd == nil {
			continue // unknown: refused when it runs
		}
		if ungrouped[q.cmd.name] {
			return noop
		}
		if q.cmd.flags&ReadOnly != 0 {
			continue
		}
		if k, ok := commandKey(q.cmd, q.args[1:]); ok && !seen[string(k)] {
			seen[string(k)] = true
			names = append(names, string(k))
		}
	}
	if len(names) == 0 {
		return noop // no write to a collection
	}
	db := a.cur()
	db.WaitCheckpoint()
	return func() func() {
		g := db.BeginGroup(names)
		return func() {
			t, err := g.Commit()
			if err != nil {
				// The log failed: EXEC's reply must not be sent. The
				// connection's last wait function is the one used, so
				// this one fails every token held.
				cn.hctx.AfterDurable(func(uint64) error { return err }, max(uint64(t), 1))
				return
			}
			cn.hctx.AfterDurable(a.wait, uint64(t))
		}
	}
}
