package ckptfile

import (
	"fmt"
	"iter"

	"github.com/memrl/memrl/engine/record"
)

// SnapVersion is the snapshot section's version.
const SnapVersion = 1

// The snapshot section (SectSnapshots), written whole in every checkpoint
// of a collection that has or had a snapshot:
//
//	version u8 = 1 | nextSeq u64 |
//	nsnap u32   | nsnap × (seq u64 | created i64 | count u64 | name u16-len bytes) |
//	nghost u32  | nghost × (id u64 | row u32 | payOff u64 | payLen u32 | created i64 |
//	                        expires i64 | key u16-len bytes | attrs u32-len bytes)
//
// The snapshots' memories are in their files (package engine/snapfile);
// a ghost is a memory deleted since a snapshot that still holds it, kept
// so that a rollback can revive it.

// Snap is one snapshot of a collection's catalog.
type Snap struct {
	Seq     uint64 // names its file; 1 and up, below the section's nextSeq
	Created int64  // unix nanoseconds
	Count   uint64 // memories it holds
	Name    string
}

// Ghost is a deleted memory that a snapshot still holds.
type Ghost struct {
	ID      uint64
	Row     uint32
	PayOff  uint64
	PayLen  uint32
	Created int64
	Expires int64  // 0: never
	Key     string // "" for none
	Attrs   []byte // nil for none
}

// AppendSnap returns the snapshot section: nextSeq, the catalog snaps,
// and the nghost ghosts that ghosts yields (taken one by one, so that the
// caller's own structures are not copied first).
// REQUIRES: ghosts yields exactly nghost ghosts; names and keys fit a u16
// length, attributes a u32 one.
func AppendSnap(nextSeq uint64, snaps []Snap, nghost int, ghosts iter.Seq[Ghost]) []byte {
	b := []byte{SnapVersion}
	b = le.AppendUint64(b, nextSeq)
	b = le.AppendUint32(b, uint32(len(snaps)))
	for _, s := range snaps {
		b = le.AppendUint64(b, s.Seq)
		b = le.AppendUint64(b, uint64(s.Created))
		b = le.AppendUint64(b, s.Count)
		b = le.AppendUint16(b, uint16(len(s.Name)))
		b = append(b, s.Name...)
	}
	b = le.AppendUint32(b, uint32(nghost))
	for g := range ghosts {
		b = le.AppendUint64(b, g.ID)
		b = le.AppendUint32(b, g.Row)
		b = le.AppendUint64(b, g.PayOff)
		b = le.AppendUint32(b, g.PayLen)
		b = le.AppendUint64(b, uint64(g.Created))
		b = le.AppendUint64(b, uint64(g.Expires))
		b = le.AppendUint16(b, uint16(len(g.Key)))
		b = append(b, g.Key...)
		b = le.AppendUint32(b, uint32(len(g.Attrs)))
		b = append(b, g.Attrs...)
	}
	return b
}

// DecodeSnap reads a snapshot section of a collection of nrows vector
// rows, handing each snapshot to snap and each ghost to ghost (its key and
// attributes copied out of data) as it is read, and returns nextSeq. It
// refuses another version, a snapshot whose seq is 0 or not below nextSeq
// or whose name snap refuses, a ghost at a row past nrows, and a section
// cut short or with bytes past its end. The counts are never trusted for
// an allocation.
func DecodeSnap(data []byte, nrows uint32, snap func(Snap) error, ghost func(Ghost)) (uint64, error) {
	d := record.Decoder{B: data}
	if v := d.U8(); v != SnapVersion {
		return 0, fmt.Errorf("snapshot section version %d, this build reads %d", v, SnapVersion)
	}
	nextSeq := d.U64()
	n := d.U32()
	for i := uint32(0); i < n && !d.Err; i++ {
		s := Snap{Seq: d.U64(), Created: int64(d.U64()), Count: d.U64()}
		s.Name = string(d.Take(int(d.U16())))
		if d.Err {
			break
		}
		if s.Seq == 0 || s.Seq >= max(nextSeq, 1) || snap(s) != nil {
			return 0, fmt.Errorf("snapshot section: bad entry %d (%q, seq %d)", i, s.Name, s.Seq)
		}
	}
	ng := d.U32()
	for i := uint32(0); i < ng && !d.Err; i++ {
		g := Ghost{ID: d.U64(), Row: d.U32(), PayOff: d.U64(), PayLen: d.U32(), Created: int64(d.U64())}
		g.Expires = int64(d.U64())
		g.Key = string(d.Take(int(d.U16())))
		if an := d.U32(); an > 0 {
			g.Attrs = append([]byte(nil), d.Take(int(an))...)
		}
		if d.Err {
			break
		}
		if g.Row >= nrows {
			return 0, fmt.Errorf("snapshot section: ghost %d at row %d of %d", g.ID, g.Row, nrows)
		}
		ghost(g)
	}
	if err := d.Done("snapshot section"); err != nil {
		return 0, err
	}
	return nextSeq, nil
}
