package ckptfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/engine/record"
)

// The format's constants (doc.go).
const (
	Magic   = "MEMRLCKP"
	Version = 6 // the version written; 1 to Version are read
	// MemSize is the size of a memory of versions 1 to 3, and the least a
	// memory of a later version takes: a count of memories that cannot
	// fit in the bytes left at MemSize each is damage.
	MemSize  = 72
	MaxBatch = 1 << 16 // memories (or tombstones) per batch, at most
)

// Kinds of checkpoint file.
const (
	KindFull  = 0 // CHECKPOINT: every memory; sequence number 0
	KindDelta = 1 // CHECKPOINT.n: the changes since file n-1 of its chain
)

// ErrCorrupt wraps every refusal of a checkpoint file (engine's
// ErrCorruptCheckpoint is this error).
var ErrCorrupt = errors.New("engine: corrupt checkpoint")

var le = binary.LittleEndian

// Header is what a checkpoint file holds before its collections.
type Header struct {
	Version uint32
	Kind    uint8  // KindFull or KindDelta; version 3 on
	ChainID uint64 // 0 in files of versions 1 and 2
	Seq     uint32 // 0 for a full checkpoint
	WalLSN  uint64 // where replay starts
	NextUID uint64 // the next collection uid
	NColl   uint32 // collections that follow
}

// AppendHeader appends h, magic included, to b.
// REQUIRES: 1 <= h.Version <= Version; Kind and Seq agree (DecodeHeader
// refuses others).
func AppendHeader(b []byte, h Header) []byte {
	b = append(b, Magic...)
	b = le.AppendUint32(b, h.Version)
	if h.Version >= 3 {
		b = append(b, h.Kind)
		b = le.AppendUint64(b, h.ChainID)
		b = le.AppendUint32(b, h.Seq)
	}
	b = le.AppendUint64(b, h.WalLSN)
	b = le.AppendUint64(b, h.NextUID)
	return le.AppendUint32(b, h.NColl)
}

// Verify checks a whole file's magic and trailing checksum, and returns
// the bytes the checksum covers (magic included). Errors wrap ErrCorrupt.
func Verify(b []byte) ([]byte, error) {
	if len(b) < len(Magic)+4+8 || string(b[:len(Magic)]) != Magic {
		return nil, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	body, sum := b[:len(b)-8], le.Uint64(b[len(b)-8:])
	if xxhash.Sum64(body) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return body, nil
}

// DecodeHeader reads a header after its magic from d. It refuses, with an
// error wrapping ErrCorrupt, a version it does not read and a kind that
// disagrees with its sequence number; a header cut short sets d.Err (and
// reads as zeros), which the caller's d.Done reports. On an error the
// header holds the fields read before it.
func DecodeHeader(d *record.Decoder) (Header, error) {
	var h Header
	h.Version = d.U32()
	if h.Version < 1 || h.Version > Version {
		return h, fmt.Errorf("%w: version %d, this build reads 1 to %d", ErrCorrupt, h.Version, Version)
	}
	if h.Version >= 3 {
		h.Kind = d.U8()
		h.ChainID = d.U64()
		h.Seq = d.U32()
		if !d.Err && (h.Kind > KindDelta || (h.Kind == KindFull) != (h.Seq == 0)) {
			return h, fmt.Errorf("%w: kind %d with sequence number %d", ErrCorrupt, h.Kind, h.Seq)
		}
	}
	h.WalLSN = d.U64()
	h.NextUID = d.U64()
	h.NColl = d.U32()
	return h, nil
}

// Section is one section of a collection or a memory (doc.go, Sections):
// state under a tag whose owner defines Data.
type Section struct {
	Tag  uint16 // a memory's fit a byte
	Data []byte
}

// AppendCollSections appends a collection's sections: n u16, then each
// as tag u16 | len u32 | bytes.
// REQUIRES: fewer than 2^16 sections, each under 4 GiB.
func AppendCollSections(b []byte, s []Section) []byte {
	b = le.AppendUint16(b, uint16(len(s)))
	for _, x := range s {
		b = le.AppendUint16(b, x.Tag)
		b = le.AppendUint32(b, uint32(len(x.Data)))
		b = append(b, x.Data...)
	}
	return b
}

// AppendMemSections appends a memory's sections: n u8, then each as
// tag u8 | len u32 | bytes.
// REQUIRES: fewer than 256 sections, tags below 256, each under 4 GiB.
func AppendMemSections(b []byte, s []Section) []byte {
	b = append(b, byte(len(s)))
	for _, x := range s {
		b = append(b, byte(x.Tag))
		b = le.AppendUint32(b, uint32(len(x.Data)))
		b = append(b, x.Data...)
	}
	return b
}

// DecodeSections reads n sections from d whose tags are read by tag and
// checked by known; the data is copied (the file's buffer is not kept).
// An unknown tag, or a tag twice, is an error (the caller wraps its
// corruption error around it); a short read returns no sections and
// leaves d.Err for the caller's d.Done.
func DecodeSections(d *record.Decoder, n int, tag func() uint16, known func(uint16) bool) ([]Section, error) {
	var s []Section
	for range n {
		if d.Err {
			return nil, nil // d.Done reports it
		}
		t := tag()
		data := d.Take(int(d.U32()))
		if d.Err {
			return nil, nil
		}
		if !known(t) {
			return nil, fmt.Errorf("unknown section tag %d (written by a newer build?)", t)
		}
		if slices.ContainsFunc(s, func(x Section) bool { return x.Tag == t }) {
			return nil, fmt.Errorf("section tag %d twice", t)
		}
		s = append(s, Section{Tag: t, Data: slices.Clone(data)})
	}
	return s, nil
}
