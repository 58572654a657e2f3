package remapfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"

	"github.com/cespare/xxhash/v2"
)

// Magic opens a row map file; Version is the layout this package writes
// and the only one it reads. A file of generation g is named
// Base + "." + g + Ext (the engine's genName).
const (
	Magic   = "MRLREMAP"
	Version = 1
	Base    = "remap"
	Ext     = ".map"
)

// ErrDamaged wraps every refusal of Decode. The engine wraps it in its
// ErrCorrupt: a damaged map whose marker is in the log stops recovery.
var ErrDamaged = errors.New("row map damaged")

// Kept is one entry of the kept rows, the i-th being new row i: memory
// ID, if it is at OldRow with its payload at OldOff at the marker, moves
// to row i with its payload at NewOff; otherwise the row is dead.
type Kept struct {
	ID     uint64
	OldRow uint32
	OldOff uint64
	NewOff uint64
}

// Pin moves a snapshot's ghost (a memory deleted since a snapshot that
// still pins its row) to Row, its payload to Off.
type Pin struct {
	Row uint32
	Off uint64
}

// Map is the content of a row map file.
type Map struct {
	Gen    uint64
	Kept   []Kept // by new row
	Pinned map[uint64]Pin
}

const (
	headerLen = len(Magic) + 1 + 8 + 4 + 4
	keptLen   = 8 + 4 + 8 + 8
	pinnedLen = 8 + 4 + 8
)

// Encode returns the file of generation gen: the nkept entries kept
// yields, in new-row order, and the npinned moves pinned yields.
// REQUIRES: kept yields exactly nkept entries and pinned npinned, each id
// once (the counts are written before the entries); both fit a u32.
// The iterators let the caller pass its own rows without a copy.
func Encode(gen uint64, nkept int, kept iter.Seq[Kept], npinned int, pinned iter.Seq2[uint64, Pin]) []byte {
	b := make([]byte, 0, headerLen+keptLen*nkept+pinnedLen*npinned+8)
	b = append(b, Magic...)
	b = append(b, Version)
	b = le.AppendUint64(b, gen)
	b = le.AppendUint32(b, uint32(nkept))
	b = le.AppendUint32(b, uint32(npinned))
	for k := range kept {
		b = le.AppendUint64(b, k.ID)
		b = le.AppendUint32(b, k.OldRow)
		b = le.AppendUint64(b, k.OldOff)
		b = le.AppendUint64(b, k.NewOff)
	}
	for id, p := range pinned {
		b = le.AppendUint64(b, id)
		b = le.AppendUint32(b, p.Row)
		b = le.AppendUint64(b, p.Off)
	}
	return le.AppendUint64(b, xxhash.Sum64(b))
}

// Decode decodes and verifies the row map file b of generation gen, whose
// xxhash64 (trailer included) the remap marker recorded as sum. Every
// refusal wraps ErrDamaged; nothing is allocated before the checksums and
// the counts agree with the file's length.
func Decode(b []byte, gen, sum uint64) (Map, error) {
	bad := func(why string) (Map, error) {
		return Map{}, fmt.Errorf("%w: generation %d: %s", ErrDamaged, gen, why)
	}
	if len(b) < headerLen+8 || !bytes.Equal(b[:len(Magic)], []byte(Magic)) {
		return bad("no header")
	}
	if xxhash.Sum64(b) != sum {
		return bad("checksum differs from the marker's")
	}
	body := b[:len(b)-8]
	if xxhash.Sum64(body) != le.Uint64(b[len(b)-8:]) {
		return bad("checksum mismatch")
	}
	if v := body[len(Magic)]; v != Version {
		return bad(fmt.Sprintf("version %d", v))
	}
	p := len(Magic) + 1
	if g := le.Uint64(body[p:]); g != gen {
		return bad(fmt.Sprintf("names generation %d", g))
	}
	nk, np := uint64(le.Uint32(body[p+8:])), uint64(le.Uint32(body[p+12:]))
	if uint64(len(body)) != uint64(headerLen)+nk*keptLen+np*pinnedLen {
		return bad("length does not match its counts")
	}
	m := Map{Gen: gen, Kept: make([]Kept, nk), Pinned: make(map[uint64]Pin, np)}
	p = headerLen
	for i := range m.Kept {
		m.Kept[i] = Kept{ID: le.Uint64(body[p:]), OldRow: le.Uint32(body[p+8:]), OldOff: le.Uint64(body[p+12:]), NewOff: le.Uint64(body[p+20:])}
		p += keptLen
	}
	for range np {
		m.Pinned[le.Uint64(body[p:])] = Pin{Row: le.Uint32(body[p+8:]), Off: le.Uint64(body[p+12:])}
		p += pinnedLen
	}
	return m, nil
}

var le = binary.LittleEndian
