package vfs

import (
	"math/rand"
	"sort"
)

// CrashMode selects what MemFS.Crash keeps of the state that was not yet
// durable when the power went out.
type CrashMode int

const (
	// DropUnsynced keeps only durable state: synced file contents and
	// names made durable by SyncDir.
	DropUnsynced CrashMode = iota
	// KeepRandomPrefix keeps, for every file, the synced contents plus a
	// random prefix of its unsynced writes (the last kept write possibly
	// only partly), and for every directory a random prefix of its
	// unsynced creates, renames and removes. Writes and name changes are
	// each kept in the order they were made.
	KeepRandomPrefix
	// TearLastSector is KeepRandomPrefix, and then the last 512-byte
	// sector touched by the last kept unsynced write of each file is torn:
	// either only the first half of the bytes that write put in the
	// sector survive (the rest revert to what was there before), or
	// those bytes are replaced by garbage. Synced bytes are never torn.
	TearLastSector
)

// SectorSize is the unit TearLastSector tears.
const SectorSize = 512

// String returns the mode's name.
func (c CrashMode) String() string {
	switch c {
	case DropUnsynced:
		return "DropUnsynced"
	case KeepRandomPrefix:
		return "KeepRandomPrefix"
	case TearLastSector:
		return "TearLastSector"
	}
	return "CrashMode(?)"
}

// Crash returns a new MemFS holding what a machine would find after a
// power loss at this instant, according to mode; rng drives the random
// choices, so a seeded rng makes a crash reproducible. Everything in the
// returned MemFS is durable. m itself is not changed and stays usable
// (handles open on it keep writing to m, not to the result).
func (m *MemFS) Crash(mode CrashMode, rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := &MemFS{dirs: make(map[string]*memDir, len(m.dirs))}
	crashed := make(map[*memNode]*memNode)

	// Iterate in sorted order so a seeded rng gives the same crash.
	paths := make([]string, 0, len(m.dirs))
	for p := range m.dirs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		d := m.dirs[p]
		names := make(map[string]*memNode, len(d.durable))
		for k, v := range d.durable {
			names[k] = v
		}
		if mode != DropUnsynced && len(d.ops) > 0 {
			for _, op := range d.ops[:rng.Intn(len(d.ops)+1)] {
				if op.del != "" {
					delete(names, op.del)
				}
				if op.set != "" {
					names[op.set] = op.node
				}
			}
		}
		nd := newMemDir()
		keys := make([]string, 0, len(names))
		for k := range names {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n := names[k]
			c, ok := crashed[n]
			if !ok {
				c = crashNode(n, mode, rng)
				crashed[n] = c
			}
			nd.cur[k] = c
			nd.durable[k] = c
		}
		out.dirs[p] = nd
	}
	return out
}

// crashNode computes the durable contents of n after a crash.
// REQUIRES: MemFS.mu held (n is read).
func crashNode(n *memNode, mode CrashMode, rng *rand.Rand) *memNode {
	data := append([]byte(nil), n.synced...)
	if mode != DropUnsynced && len(n.ops) > 0 {
		// The surviving ops: the first k whole, then maybe a prefix of
		// the next write (it was on its way to the disk).
		k := rng.Intn(len(n.ops) + 1)
		survivors := append([]dataOp(nil), n.ops[:k]...)
		if k < len(n.ops) && !n.ops[k].trunc {
			p := n.ops[k]
			p.data = p.data[:rng.Intn(len(p.data)+1)]
			if len(p.data) > 0 {
				survivors = append(survivors, p)
			}
		}
		for i, op := range survivors {
			if i == len(survivors)-1 && mode == TearLastSector && !op.trunc {
				before := append([]byte(nil), data...)
				data = tear(before, applyOp(data, op), op, rng)
				break
			}
			data = applyOp(data, op)
		}
	}
	return &memNode{data: data, synced: append([]byte(nil), data...), modTime: n.modTime}
}

func applyOp(b []byte, op dataOp) []byte {
	if op.trunc {
		return applyTruncate(b, op.off)
	}
	return applyWrite(b, op.off, op.data)
}

// tear damages, in after, the last sector touched by the write op (whose
// effect turned before into after). Only bytes op wrote are changed.
func tear(before, after []byte, op dataOp, rng *rand.Rand) []byte {
	end := op.off + int64(len(op.data))
	if len(op.data) == 0 {
		return after
	}
	start := (end - 1) / SectorSize * SectorSize
	if start < op.off {
		start = op.off
	}
	region := after[start:end]
	if rng.Intn(2) == 0 {
		// Half-written: the second half reverts to the old bytes, or to
		// zeros where the write extended the file.
		half := int64(len(region)) / 2
		for i := start + half; i < end; i++ {
			if i < int64(len(before)) {
				after[i] = before[i]
			} else {
				after[i] = 0
			}
		}
	} else {
		rng.Read(region)
	}
	return after
}
