package ckptfile

import (
	"errors"
	"fmt"

	"github.com/memrl/memrl/engine/record"
)

// Collection section tags (doc.go, Sections). A tag is never reused for
// other bytes.
const (
	SectSnapshots   uint16 = 1      // the snapshot catalog and ghosts (snapsect.go)
	SectCompact     uint16 = 2      // the generation of the collection's files
	SectPrunePolicy uint16 = 3      // the prune policy and its latest run
	SectTest        uint16 = 0xFFFF // written by tests only
)

// Memory section tags (they fit a byte).
const (
	MemSectHistory uint16 = 1    // the memory's recent updates (package engine/histlog)
	MemSectTest    uint16 = 0xFF // written by tests only
)

// CompactVersion is the compaction section's version.
const CompactVersion = 1

// ErrBadCompact: the compaction section is 9 bytes of version 1.
var ErrBadCompact = errors.New("compaction section: want 9 bytes of version 1")

// AppendCompact returns the compaction section (SectCompact) of a
// collection whose files are of generation gen:
//
//	version u8 = 1 | gen u64
//
// A collection never compacted (generation 0) writes none.
func AppendCompact(gen uint64) []byte {
	return le.AppendUint64([]byte{CompactVersion}, gen)
}

// DecodeCompact reads a compaction section; another version or length is
// ErrBadCompact.
func DecodeCompact(data []byte) (uint64, error) {
	if len(data) != 9 || data[0] != CompactVersion {
		return 0, ErrBadCompact
	}
	return le.Uint64(data[1:]), nil
}

// PruneVersion is the prune policy section's version.
const PruneVersion byte = 1

// Prune is the prune policy section (SectPrunePolicy): the policy, when
// it was set, and the pruner's latest run.
//
//	version u8 = 1 | setAt i64 | lastAt i64 | lastCount u64 | policy (record.AppendPolicy)
//
// Times are unix nanoseconds; a collection with neither a policy nor a
// past run writes none.
type Prune struct {
	SetAt     int64
	LastAt    int64
	LastCount uint64
	Policy    record.Policy // without record.PolicyOn: none
}

// AppendPrune returns p's section.
// REQUIRES: p.Policy fits record.AppendPolicy.
func AppendPrune(p Prune) []byte {
	b := make([]byte, 0, 80)
	b = append(b, PruneVersion)
	b = le.AppendUint64(b, uint64(p.SetAt))
	b = le.AppendUint64(b, uint64(p.LastAt))
	b = le.AppendUint64(b, p.LastCount)
	return record.AppendPolicy(b, p.Policy)
}

// DecodePrune reads a prune policy section. It refuses another version, a
// policy whose layout record.ReadPolicy refuses, a policy that check
// refuses (the caller's check of the values; called only on a policy read
// whole), and a section cut short or with bytes past its policy, in that
// order.
func DecodePrune(data []byte, check func(record.Policy) error) (Prune, error) {
	var p Prune
	d := record.Decoder{B: data}
	if v := d.U8(); !d.Err && v != PruneVersion {
		return p, fmt.Errorf("prune policy section version %d, want %d", v, PruneVersion)
	}
	p.SetAt = int64(d.U64())
	p.LastAt = int64(d.U64())
	p.LastCount = d.U64()
	w, err := record.ReadPolicy(&d)
	if err == nil && !d.Err {
		err = check(w)
	}
	if err != nil {
		return p, fmt.Errorf("prune policy section: %v", err)
	}
	p.Policy = w
	if d.Err || len(d.B) != 0 {
		return p, fmt.Errorf("prune policy section: bad length")
	}
	return p, nil
}
