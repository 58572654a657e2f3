package server

import (
	"slices"
	"sync"
)

// Transaction locks: which commands a transaction excludes (tx.go,
// "Locks").
//
// Two levels, always taken in this order: Server.txMu, then collection
// locks, several of them in increasing order of name. Nothing holding a
// collection lock waits for txMu, and only EXEC holds more than one
// collection lock, so no two goroutines can wait for each other.
//
//   - a command outside a transaction holds txMu shared and, if it names
//     a collection (commandKey: every MEM.* command but MEM.LIST and
//     MEM.CHECKPOINT), that collection's lock shared, while it runs;
//   - a transaction of reads only runs each queued command exactly so:
//     it excludes no one, and sees each command's collection as that
//     command runs (other clients' writes may land between its commands);
//   - a transaction that writes holds txMu shared and the locks of every
//     collection its commands name exclusively, for its whole length: no
//     other command on those collections interleaves with it, and every
//     other collection, PING, INFO, … go on;
//   - a transaction with a write that names no collection (MEM.CHECKPOINT,
//     or a command registered by the embedding program without a key)
//     holds txMu exclusively, as before: nothing else runs meanwhile.
//
// Only a user allowed to write can take a lock exclusively, so a read-only
// user can hold up writers only as long as one of its commands runs on
// the collection they write, which busy-timeout bounds (busy.go).

// collLocks is the table of collection locks. An entry exists while some
// connection holds or waits for it (refs > 0), and one no one holds stays
// only while the table has at most keepIdleLocks entries: a command on
// one of a few collections finds its entry there (no allocation), and the
// table does not grow with every name a client ever sends.
type collLocks struct {
	mu sync.Mutex           // guards m and every entry's refs
	m  map[string]*collLock // by collection name
}

// keepIdleLocks is how many entries collLocks keeps when no one holds them.
const keepIdleLocks = 1024

// collLock is one collection's lock.
type collLock struct {
	rw   sync.RWMutex
	name string
	refs int // connections holding or waiting for rw; guarded by collLocks.mu
}

// get returns name's entry with one more reference; put gives it back.
func (t *collLocks) get(name []byte) *collLock {
	t.mu.Lock()
	l := t.m[string(name)] // no allocation for the look-up
	if l == nil {
		if t.m == nil {
			t.m = make(map[string]*collLock)
		}
		l = &collLock{name: string(name)}
		t.m[l.name] = l
	}
	l.refs++
	t.mu.Unlock()
	return l
}

func (t *collLocks) put(l *collLock) {
	t.mu.Lock()
	if l.refs--; l.refs == 0 && len(t.m) > keepIdleLocks {
		delete(t.m, l.name)
	}
	t.mu.Unlock()
}

// lockCmd takes what a command outside a transaction holds while it runs:
// txMu shared and its collection's lock shared.
// REQUIRES: called by the connection's goroutine, holding neither.
func (c *conn) lockCmd(cmd *command, args [][]byte) {
	c.srv.txMu.RLock()
	c.sharedHeld = true
	if key, ok := commandKey(cmd, args[1:]); ok {
		c.collHeld = c.srv.colls.get(key)
		c.collHeld.rw.RLock()
	}
}

// unlockCmd gives back what lockCmd took.
// REQUIRES: called by the connection's goroutine, holding them.
func (c *conn) unlockCmd() {
	if l := c.collHeld; l != nil {
		c.collHeld = nil
		l.rw.RUnlock()
		c.srv.colls.put(l)
	}
	c.sharedHeld = false
	c.srv.txMu.RUnlock()
}

// txLocks is what a transaction that writes holds for its whole length.
type txLocks struct {
	world bool        // txMu held exclusively (a write without a collection)
	colls []*collLock // held exclusively, in increasing order of name
}

// txWrites reports whether tx has a command that writes.
func txWrites(tx *txState) bool {
	for _, q := range tx.cmds {
		if q.cmd.flags&ReadOnly == 0 {
			return true
		}
	}
	return false
}

// lockTx takes the locks of a transaction that writes (see above).
// REQUIRES: called by the connection's goroutine, holding no lock.
func (c *conn) lockTx(tx *txState) txLocks {
	var names []string
	world := false
	for _, q := range tx.cmds {
		key, ok := commandKey(q.cmd, q.args[1:])
		switch {
		case ok:
			names = append(names, string(key))
		case q.cmd.flags&ReadOnly == 0:
			world = true
		}
	}
	if world {
		c.srv.txMu.Lock()
		return txLocks{world: true}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	c.srv.txMu.RLock()
	l := txLocks{colls: make([]*collLock, len(names))}
	for i, n := range names {
		l.colls[i] = c.srv.colls.get([]byte(n))
		l.colls[i].rw.Lock()
	}
	return l
}

// unlockTx gives back what lockTx took.
func (c *conn) unlockTx(l txLocks) {
	if l.world {
		c.srv.txMu.Unlock()
		return
	}
	for i := len(l.colls) - 1; i >= 0; i-- {
		l.colls[i].rw.Unlock()
		c.srv.colls.put(l.colls[i])
	}
	c.srv.txMu.RUnlock()
}
