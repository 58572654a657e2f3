package snapfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// The layout's constants (doc.go).
const (
	Magic      = "MEMRLSNP"
	Version    = 1
	headerSize = 8 + 4 + 8 + 8 + 8 // magic .. created; then the name
	// minEntry is the least an entry takes (no key, no attributes).
	minEntry = 62
)

// ErrDamaged wraps every failure to decode a snapshot file.
var ErrDamaged = errors.New("snapshot file damaged")

var le = binary.LittleEndian

// Entry is one memory's state in a snapshot.
type Entry struct {
	ID         uint64
	Q          float64
	Visits     uint64
	LastReward float64
	RewardSum  float64
	Updated    int64  // unix nanoseconds
	Expires    int64  // unix nanoseconds, or 0 for never
	Key        string // external key, or ""
	Attrs      []byte // compact JSON object, or nil
}

// File is a decoded snapshot file.
type File struct {
	UID, Seq uint64 // the collection's uid, the snapshot's sequence number
	Created  int64  // unix nanoseconds
	Name     string
	Entries  []Entry // ascending ids
}

// Encode returns f's bytes, checksum included.
// REQUIRES: f.Entries in ascending id order, each id once (Decode
// refuses others); f.Name, keys and attributes fit their length fields.
func Encode(f File) []byte {
	n := headerSize + 2 + len(f.Name) + 8 + 8
	for _, e := range f.Entries {
		n += minEntry + len(e.Key) + len(e.Attrs)
	}
	b := make([]byte, 0, n)
	b = append(b, Magic...)
	b = le.AppendUint32(b, Version)
	b = le.AppendUint64(b, f.UID)
	b = le.AppendUint64(b, f.Seq)
	b = le.AppendUint64(b, uint64(f.Created))
	b = le.AppendUint16(b, uint16(len(f.Name)))
	b = append(b, f.Name...)
	b = le.AppendUint64(b, uint64(len(f.Entries)))
	for _, e := range f.Entries {
		b = AppendEntry(b, e)
	}
	return le.AppendUint64(b, xxhash.Sum64(b))
}

// Decode decodes and checks a snapshot file that should be snapshot seq
// of collection uid. Keys and attributes are copied (b is not kept).
// Errors wrap ErrDamaged.
func Decode(b []byte, uid, seq uint64) (File, error) {
	var f File
	if len(b) < headerSize+8 || string(b[:8]) != Magic {
		return f, fmt.Errorf("%w: not a snapshot file", ErrDamaged)
	}
	body := b[:len(b)-8]
	if xxhash.Sum64(body) != le.Uint64(b[len(b)-8:]) {
		return f, fmt.Errorf("%w: checksum mismatch", ErrDamaged)
	}
	d := reader{b: body[8:]}
	if v := d.u32(); v != Version {
		return f, fmt.Errorf("%w: version %d, this build reads %d", ErrDamaged, v, Version)
	}
	f.UID, f.Seq, f.Created = d.u64(), d.u64(), int64(d.u64())
	f.Name = string(d.take(int(d.u16())))
	n := d.u64()
	if d.err || n > uint64(len(d.b))/minEntry {
		return f, fmt.Errorf("%w: bad header", ErrDamaged)
	}
	if f.UID != uid || f.Seq != seq {
		return f, fmt.Errorf("%w: holds snapshot %d of collection %d, want %d of %d", ErrDamaged, f.Seq, f.UID, seq, uid)
	}
	f.Entries = make([]Entry, n)
	for i := range f.Entries {
		e := &f.Entries[i]
		e.ID = d.u64()
		d.b = DecodeEntryRest(d.b, e, &d.err)
		if d.err {
			return f, fmt.Errorf("%w: truncated entry %d", ErrDamaged, i)
		}
		if i > 0 && e.ID <= f.Entries[i-1].ID {
			return f, fmt.Errorf("%w: ids out of order at entry %d", ErrDamaged, i)
		}
	}
	if len(d.b) != 0 {
		return f, fmt.Errorf("%w: %d bytes past the entries", ErrDamaged, len(d.b))
	}
	return f, nil
}

// AppendEntry appends e as snapshot files and rollback records hold it:
// id u64 | q f64 | visits u64 | lastReward f64 | rewardSum f64 |
// updated i64 | expires i64 | key u16-len bytes | attrs u32-len bytes.
func AppendEntry(b []byte, e Entry) []byte {
	b = le.AppendUint64(b, e.ID)
	b = le.AppendUint64(b, math.Float64bits(e.Q))
	b = le.AppendUint64(b, e.Visits)
	b = le.AppendUint64(b, math.Float64bits(e.LastReward))
	b = le.AppendUint64(b, math.Float64bits(e.RewardSum))
	b = le.AppendUint64(b, uint64(e.Updated))
	b = le.AppendUint64(b, uint64(e.Expires))
	b = le.AppendUint16(b, uint16(len(e.Key)))
	b = append(b, e.Key...)
	b = le.AppendUint32(b, uint32(len(e.Attrs)))
	return append(b, e.Attrs...)
}

// DecodeEntryRest decodes what follows the id in AppendEntry's layout
// from the start of b into e, and returns the bytes after it. The key and
// attributes are copied. A short input sets *short (and leaves e partly
// filled); once *short is set, nothing more is read.
func DecodeEntryRest(b []byte, e *Entry, short *bool) []byte {
	d := reader{b: b, err: *short}
	e.Q, e.Visits, e.LastReward, e.RewardSum = d.f64(), d.u64(), d.f64(), d.f64()
	e.Updated, e.Expires = int64(d.u64()), int64(d.u64())
	e.Key = string(d.take(int(d.u16())))
	if an := d.u32(); an > 0 {
		e.Attrs = slices.Clone(d.take(int(an)))
	}
	*short = d.err
	return d.b
}

// reader reads little-endian fields and remembers the first short read.
type reader struct {
	b   []byte
	err bool
}

// take returns the next n bytes. On a short read it sets d.err and
// returns 8 zero bytes (or fewer), enough for the fixed-size readers
// below: never a buffer of the length asked for, which may be a length
// field read from damaged input.
func (d *reader) take(n int) []byte {
	if d.err || n < 0 || len(d.b) < n {
		d.err = true
		return make([]byte, min(max(n, 0), 8))
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}
func (d *reader) u16() uint16  { return le.Uint16(d.take(2)) }
func (d *reader) u32() uint32  { return le.Uint32(d.take(4)) }
func (d *reader) u64() uint64  { return le.Uint64(d.take(8)) }
func (d *reader) f64() float64 { return math.Float64frombits(d.u64()) }
