package engine

import "fmt"

// replaySnapshotRecord applies a logged snapshot, snapshot delete or
// rollback (snapshot_record.go). Records of collections dropped later are
// skipped, as deletes are.
// REQUIRES: no concurrent use of db (Open has not returned yet).
func (db *DB) replaySnapshotRecord(rec []byte) error {
	switch rec[0] {
	case recSnapshot:
		r, err := decodeSnapshot(rec)
		if err != nil {
			return err
		}
		c, ok := db.byUID[r.UID]
		if !ok || r.Seq < max(c.snap.nextSeq, 1) {
			return nil
		}
		c.applySnapshotLocked(r, nil) // its ids come from its file
		if s := c.snap.list[len(c.snap.list)-1]; !c.loadSnapshotFileLocked(s) {
			c.snap.list = c.snap.list[:len(c.snap.list)-1]
		}
	case recDelSnapshot:
		r, err := decodeDelSnapshot(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[r.UID]; ok {
			c.applyDelSnapshotLocked(r)
		}
	case recRollbackBatch:
		uid, rb, err := decodeRollbackBatch(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[uid]; ok {
			c.replayRollbackBatchLocked(rb)
		}
	case recRollback:
		r, err := decodeRollback(rec)
		if err != nil {
			return err
		}
		if c, ok := db.byUID[r.UID]; ok {
			return c.replayRollbackLocked(r)
		}
	default:
		return fmt.Errorf("%w: unknown type %d", errBadRecord, rec[0])
	}
	return nil
}
