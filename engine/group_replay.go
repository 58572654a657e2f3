package engine

import (
	"bytes"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// groupReplay passes the log's records to apply in log order, except that
// the members of a group (group.go) are held back until the group's
// commit record, and dropped if it never comes.
//
// Once a member of an uncommitted group is held, every later record is
// held behind it too, whatever it belongs to: a record of another
// collection cannot depend on the group's, but a record logged for one of
// the group's collections after the group was committed in memory, by a
// writer that saw no group, may (a background expiry of a memory the
// transaction added), and log order is the order changes were applied
// in. Held records are copied; they are at most the log from the first
// member of an open group to its commit: one transaction's records, plus
// whatever interleaved with it.
type groupReplay struct {
	apply func(lsn uint64, rec []byte) error
	// open holds the count and sum of the members seen of each group
	// whose commit has not been seen.
	open map[uint64]*groupCount
	// held are the records held back, in log order; gid is the open group
	// a member belongs to, or 0 once it may be applied.
	held []heldRec
	// maxID is the largest group id seen.
	maxID uint64
	// dropped are the groups whose members were dropped (no commit, or an
	// abort record), and droppedRecs how many members that was.
	dropped     []uint64
	droppedRecs int
	// gapped is set when the replay starts past a gap in the log that the
	// operator accepted (loggap.go): a group whose first members fell in
	// the gap then commits more members than the replay saw. It is dropped
	// whole, as a group cut short by a crash is, instead of refusing the
	// database: the records in the gap are gone either way, and the rest
	// of the transaction must not be applied without them.
	gapped bool
}

type groupCount struct {
	n   uint32
	sum uint64
}

type heldRec struct {
	lsn uint64
	gid uint64
	rec []byte
}

func newGroupReplay(apply func(lsn uint64, rec []byte) error) *groupReplay {
	return &groupReplay{apply: apply, open: make(map[uint64]*groupCount)}
}

// record takes the next record of the log. rec is valid only during the
// call.
func (r *groupReplay) record(lsn uint64, rec []byte) error {
	if len(rec) == 0 {
		return r.apply(lsn, rec) // refused there
	}
	switch rec[0] {
	case recGroupMember:
		gid, inner, err := decodeGroupMember(rec)
		if err != nil {
			return err
		}
		r.maxID = max(r.maxID, gid)
		gc := r.open[gid]
		if gc == nil {
			gc = &groupCount{}
			r.open[gid] = gc
		}
		gc.n++
		gc.sum += xxhash.Sum64(inner)
		r.held = append(r.held, heldRec{lsn: lsn, gid: gid, rec: bytes.Clone(inner)})
		return nil
	case recGroupCommit:
		c, err := decodeGroupCommit(rec)
		if err != nil {
			return err
		}
		r.maxID = max(r.maxID, c.gid)
		gc := r.open[c.gid]
		if r.gapped && (gc == nil || gc.n < c.n) {
			r.drop(c.gid) // its first members fell in the accepted gap
			return r.flush()
		}
		if gc == nil || gc.n != c.n || gc.sum != c.sum {
			var n uint32
			var sum uint64
			if gc != nil {
				n, sum = gc.n, gc.sum
			}
			return fmt.Errorf("%w: group %d commits %d members (sum %#x) but the log holds %d (sum %#x)",
				errBadRecord, c.gid, c.n, c.sum, n, sum)
		}
		delete(r.open, c.gid)
		for i := range r.held {
			if r.held[i].gid == c.gid {
				r.held[i].gid = 0
			}
		}
		return r.flush()
	case recGroupAbort:
		gid, err := decodeGroupAbort(rec)
		if err != nil {
			return err
		}
		r.maxID = max(r.maxID, gid)
		if _, ok := r.open[gid]; ok { // else its members are before the replay's start
			r.discard(gid) // dropped by an earlier recovery: not reported again
		}
		return r.flush()
	}
	if len(r.held) == 0 {
		return r.apply(lsn, rec)
	}
	r.held = append(r.held, heldRec{lsn: lsn, rec: bytes.Clone(rec)})
	return nil
}

// drop forgets open group gid and its held members, and reports it
// (recovery logs its abort record).
func (r *groupReplay) drop(gid uint64) {
	r.dropped = append(r.dropped, gid)
	r.droppedRecs += r.discard(gid)
}

// discard forgets open group gid and its held members, and returns how
// many members that was.
func (r *groupReplay) discard(gid uint64) int {
	delete(r.open, gid)
	n := 0
	kept := r.held[:0]
	for _, h := range r.held {
		if h.gid == gid {
			n++
			continue
		}
		kept = append(kept, h)
	}
	clear(r.held[len(kept):])
	r.held = kept
	return n
}

// flush applies the held records up to the first member of an open group.
func (r *groupReplay) flush() error {
	i := 0
	for ; i < len(r.held) && r.held[i].gid == 0; i++ {
		if err := r.apply(r.held[i].lsn, r.held[i].rec); err != nil {
			return err
		}
	}
	if i == len(r.held) {
		r.held = nil // let the copies go
		return nil
	}
	clear(r.held[:i])
	r.held = r.held[i:]
	return nil
}

// finish is called at the end of the log: the groups still open never
// committed (the process stopped first), so their members are dropped and
// the records held behind them applied.
func (r *groupReplay) finish() error {
	for gid := range r.open {
		r.drop(gid)
	}
	return r.flush()
}
