package engine

import (
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// A checkpoint is one file, CHECKPOINT, replaced atomically (written to a
// temporary file, fsynced, renamed, folder fsynced). It holds the state of
// every collection as of some moment during the checkpoint, and the WAL
// position from which replay must start to reach the present:
//
//	+-----------+---------+---------+---------+------------+----------------+---------+
//	| "MEMRLCKP"| version | walLSN  | nextUID | ncoll u32  | collections... | xxh64   |
//	| 8 bytes   | u32     | u64     | u64     |            |                | u64     |
//	+-----------+---------+---------+---------+------------+----------------+---------+
//
//	collection: uid u64 | name u16-len bytes | config (engine/config.go encodeConfig) |
//	            nrows u32 | paySize u64 | nextID u64 | nmem u64 | nmem × memory
//	memory:     id u64 | row u32 | payOff u64 | payLen u32 | created i64 | q f64 | visits u64 |
//	            lastReward f64 | rewardSum f64 | updated i64                      (72 bytes)
//
// The trailing xxh64 covers every byte before it. nrows and paySize are the
// vector and payload file sizes that were fsynced before the checkpoint was
// written; recovery trusts nothing past them.
const (
	ckptMagic   = "MEMRLCKP"
	ckptVersion = 1
	ckptName    = "CHECKPOINT"
)

// ErrCorruptCheckpoint is returned by Open when the checkpoint file fails
// its checksum, has an unknown version, or cannot be decoded. memrl never
// guesses past a damaged checkpoint: the operator restores it.
var ErrCorruptCheckpoint = errors.New("engine: corrupt checkpoint")

type ckptMemory struct {
	id         uint64
	m          memory
	q          float64
	visits     uint64
	lastReward float64
	rewardSum  float64
	updated    int64
}

type ckptCollection struct {
	uid     uint64
	name    string
	cfg     Config
	nrows   uint32
	paySize uint64
	nextID  uint64
	mems    []ckptMemory
}

type checkpoint struct {
	walLSN  uint64
	nextUID uint64
	colls   []ckptCollection
}

func encodeCheckpoint(cp checkpoint) []byte {
	n := 40
	for _, c := range cp.colls {
		n += 96 + len(c.name) + 72*len(c.mems)
	}
	b := make([]byte, 0, n)
	pace := newPacer()
	b = append(b, ckptMagic...)
	b = le.AppendUint32(b, ckptVersion)
	b = le.AppendUint64(b, cp.walLSN)
	b = le.AppendUint64(b, cp.nextUID)
	b = le.AppendUint32(b, uint32(len(cp.colls)))
	for _, c := range cp.colls {
		b = le.AppendUint64(b, c.uid)
		b = le.AppendUint16(b, uint16(len(c.name)))
		b = append(b, c.name...)
		b = encodeConfig(b, c.cfg)
		b = le.AppendUint32(b, c.nrows)
		b = le.AppendUint64(b, c.paySize)
		b = le.AppendUint64(b, c.nextID)
		b = le.AppendUint64(b, uint64(len(c.mems)))
		for i, m := range c.mems {
			if i%4096 == 4095 {
				pace.step()
			}
			b = le.AppendUint64(b, m.id)
			b = le.AppendUint32(b, m.m.row)
			b = le.AppendUint64(b, m.m.payOff)
			b = le.AppendUint32(b, m.m.payLen)
			b = le.AppendUint64(b, uint64(m.m.created))
			b = putF64(b, m.q)
			b = le.AppendUint64(b, m.visits)
			b = putF64(b, m.lastReward)
			b = putF64(b, m.rewardSum)
			b = le.AppendUint64(b, uint64(m.updated))
		}
	}
	return le.AppendUint64(b, xxhash.Sum64(b))
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	var cp checkpoint
	if len(b) < len(ckptMagic)+4+8 || string(b[:len(ckptMagic)]) != ckptMagic {
		return cp, fmt.Errorf("%w: bad magic", ErrCorruptCheckpoint)
	}
	body, sum := b[:len(b)-8], le.Uint64(b[len(b)-8:])
	if xxhash.Sum64(body) != sum {
		return cp, fmt.Errorf("%w: checksum mismatch", ErrCorruptCheckpoint)
	}
	d := decoder{b: body[len(ckptMagic):]}
	if v := d.u32(); v != ckptVersion {
		return cp, fmt.Errorf("%w: version %d, this build reads %d", ErrCorruptCheckpoint, v, ckptVersion)
	}
	cp.walLSN = d.u64()
	cp.nextUID = d.u64()
	ncoll := d.u32()
	for i := uint32(0); i < ncoll && !d.err; i++ {
		var c ckptCollection
		c.uid = d.u64()
		c.name = string(d.take(int(d.u16())))
		c.cfg = decodeConfig(&d)
		c.nrows = d.u32()
		c.paySize = d.u64()
		c.nextID = d.u64()
		nmem := d.u64()
		if nmem > uint64(len(d.b))/72 {
			return cp, fmt.Errorf("%w: collection %q claims %d memories", ErrCorruptCheckpoint, c.name, nmem)
		}
		c.mems = make([]ckptMemory, nmem)
		for j := range c.mems {
			m := &c.mems[j]
			m.id = d.u64()
			m.m.row = d.u32()
			m.m.payOff = d.u64()
			m.m.payLen = d.u32()
			m.m.created = int64(d.u64())
			m.q = d.f64()
			m.visits = d.u64()
			m.lastReward = d.f64()
			m.rewardSum = d.f64()
			m.updated = int64(d.u64())
			// Loading trusts rows and payload ranges, so a checkpoint
			// whose checksum verifies but that points past its own file
			// sizes (a bug, never a torn write) is refused, not indexed.
			if !d.err && (m.m.row >= c.nrows || m.m.payOff+uint64(m.m.payLen) > c.paySize) {
				return cp, fmt.Errorf("%w: collection %q: memory %d lies past the recorded file sizes", ErrCorruptCheckpoint, c.name, m.id)
			}
		}
		cp.colls = append(cp.colls, c)
	}
	if err := d.done("checkpoint"); err != nil {
		return cp, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	return cp, nil
}
