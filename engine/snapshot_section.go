package engine

import "fmt"

// The snapshot state's checkpoint section (collection tag sectSnapshots),
// written whole in every checkpoint:
//
//	version u8 = 1 | nextSeq u64 |
//	nsnap u32   | nsnap × (seq u64 | created i64 | count u64 | name u16-len bytes) |
//	nghost u32  | nghost × (id u64 | row u32 | payOff u64 | payLen u32 | created i64 |
//	                        expires i64 | key u16-len bytes | attrs u32-len bytes)
//
// The snapshots' memories are in their files (package snapfile), read when
// the section is loaded. The checkpoint's checksum covers the section; a
// section that does not decode is a damaged checkpoint.
const snapSectionVersion = 1

// snapSectionLocked returns the section, or nil when the collection never
// had a snapshot.
// REQUIRES: c.mu held for reading.
func (c *Collection) snapSectionLocked() []ckptSection {
	st := &c.snap
	if st.nextSeq == 0 && len(st.list) == 0 && len(st.ghosts) == 0 {
		return nil
	}
	b := []byte{snapSectionVersion}
	b = le.AppendUint64(b, st.nextSeq)
	b = le.AppendUint32(b, uint32(len(st.list)))
	for _, s := range st.list {
		b = le.AppendUint64(b, s.seq)
		b = le.AppendUint64(b, uint64(s.created))
		b = le.AppendUint64(b, s.count)
		b = le.AppendUint16(b, uint16(len(s.name)))
		b = append(b, s.name...)
	}
	b = le.AppendUint32(b, uint32(len(st.ghosts)))
	for id, m := range st.ghosts {
		b = le.AppendUint64(b, id)
		b = le.AppendUint32(b, m.row)
		b = le.AppendUint64(b, m.payOff)
		b = le.AppendUint32(b, m.payLen)
		b = le.AppendUint64(b, uint64(m.created))
		b = le.AppendUint64(b, uint64(m.expires()))
		b = le.AppendUint16(b, uint16(len(m.key())))
		b = append(b, m.key()...)
		b = le.AppendUint32(b, uint32(len(m.attrs())))
		b = append(b, m.attrs()...)
	}
	return []ckptSection{{Tag: sectSnapshots, Data: b}}
}

// loadSnapSectionLocked loads the section's catalog and ghosts, and reads
// each snapshot's file (loadSnapshotFileLocked).
// REQUIRES: c not yet shared (recovery).
func (c *Collection) loadSnapSectionLocked(data []byte, nrows uint32) error {
	d := decoder{B: data}
	if v := d.U8(); v != snapSectionVersion {
		return fmt.Errorf("snapshot section version %d, this build reads %d", v, snapSectionVersion)
	}
	st := snapState{nextSeq: d.U64(), ghosts: make(map[uint64]memory)}
	n := d.U32()
	for i := uint32(0); i < n && !d.Err; i++ {
		s := &snapshot{seq: d.U64(), created: int64(d.U64()), count: d.U64()}
		s.name = string(d.Take(int(d.U16())))
		if d.Err {
			break
		}
		if err := checkSnapshotName(s.name); err != nil || s.seq == 0 || s.seq >= max(st.nextSeq, 1) {
			return fmt.Errorf("snapshot section: bad entry %d (%q, seq %d)", i, s.name, s.seq)
		}
		st.list = append(st.list, s)
	}
	ng := d.U32()
	for i := uint32(0); i < ng && !d.Err; i++ {
		id := d.U64()
		var m memory
		m.row, m.payOff, m.payLen, m.created = d.U32(), d.U64(), d.U32(), int64(d.U64())
		expires := int64(d.U64())
		key := string(d.Take(int(d.U16())))
		var attrs []byte
		if an := d.U32(); an > 0 {
			attrs = append([]byte(nil), d.Take(int(an))...)
		}
		if d.Err {
			break
		}
		if m.row >= nrows {
			return fmt.Errorf("snapshot section: ghost %d at row %d of %d", id, m.row, nrows)
		}
		m.ext = makeExt(attrs, key, expires)
		st.ghosts[id] = m
	}
	if err := d.Done("snapshot section"); err != nil {
		return err
	}
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
