package engine

import "github.com/memrl/memrl/engine/ckptfile"

// The snapshot state's checkpoint section (collection tag sectSnapshots),
// written whole in every checkpoint: the catalog (each snapshot's seq,
// time, count and name), the next seq, and the ghosts (ckptfile.AppendSnap
// has the layout). The snapshots' memories are in their files (package
// snapfile), read when the section is loaded. The checkpoint's checksum
// covers the section; a section that does not decode is a damaged
// checkpoint.
const snapSectionVersion = ckptfile.SnapVersion

// snapSectionLocked returns the section, or nil when the collection never
// had a snapshot. The ghosts are encoded straight from the collection's
// map.
// REQUIRES: c.mu held for reading.
func (c *Collection) snapSectionLocked() []ckptSection {
	st := &c.snap
	if st.nextSeq == 0 && len(st.list) == 0 && len(st.ghosts) == 0 {
		return nil
	}
	snaps := make([]ckptfile.Snap, len(st.list))
	for i, s := range st.list {
		snaps[i] = ckptfile.Snap{Seq: s.seq, Created: s.created, Count: s.count, Name: s.name}
	}
	ghosts := func(yield func(ckptfile.Ghost) bool) {
		for id, m := range st.ghosts {
			x := m.extOrZero()
			if !yield(ckptfile.Ghost{ID: id, Row: m.row, PayOff: m.payOff, PayLen: m.payLen, Created: m.created,
				Expires: x.expires, Key: x.key, Attrs: x.attrs}) {
				return
			}
		}
	}
	b := ckptfile.AppendSnap(st.nextSeq, snaps, len(st.ghosts), ghosts)
	return []ckptSection{{Tag: sectSnapshots, Data: b}}
}

// loadSnapSectionLocked loads the section's catalog and ghosts
// (ckptfile.DecodeSnap, with the engine's rule for snapshot names), and
// reads each snapshot's file (loadSnapshotFileLocked).
// REQUIRES: c not yet shared (recovery).
func (c *Collection) loadSnapSectionLocked(data []byte, nrows uint32) error {
	st := snapState{ghosts: make(map[uint64]memory)}
	next, err := ckptfile.DecodeSnap(data, nrows,
		func(s ckptfile.Snap) error {
			if err := checkSnapshotName(s.Name); err != nil {
				return err
			}
			st.list = append(st.list, &snapshot{seq: s.Seq, created: s.Created, count: s.Count, name: s.Name})
			return nil
		},
		func(g ckptfile.Ghost) {
			st.ghosts[g.ID] = memory{row: g.Row, payOff: g.PayOff, payLen: g.PayLen, created: g.Created,
				ext: makeExt(g.Attrs, g.Key, g.Expires)}
		})
	if err != nil {
		return err
	}
	st.nextSeq = next
	c.snap = st
	kept := c.snap.list[:0]
	for _, s := range c.snap.list {
		if c.loadSnapshotFileLocked(s) {
			kept = append(kept, s)
		}
	}
	c.snap.list = kept
	return nil
}
