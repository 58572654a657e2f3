package histlog

import (
	"encoding/binary"
	"fmt"
	"math"
)

// MaxLen bounds the entries of a log (engine.MaxHistoryLen).
const MaxLen = 1024

// SectionVersion is the version byte of a checkpoint's history section.
const SectionVersion = 1

var le = binary.LittleEndian

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Entry is one update of a memory's utility.
type Entry struct {
	MS     int64   // when it was applied, unix milliseconds
	Reward float64 // the reward; finite
	Q      float64 // Q after the update; finite
	Visits uint64  // visits after the update
}

const (
	rewardF32 = 0xFE
	rewardF64 = 0xFF
	rewardInt = 125 // kinds 0..250 hold the integers -125..125
)

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// appendEntry appends an entry with the given differences.
func appendEntry(b []byte, dms int64, dvisits int64, reward, q float64) []byte {
	b = binary.AppendUvarint(b, zigzag(dms))
	b = binary.AppendUvarint(b, zigzag(dvisits))
	switch {
	case reward == math.Trunc(reward) && math.Abs(reward) <= rewardInt && (reward != 0 || !math.Signbit(reward)):
		b = append(b, byte(int(reward)+rewardInt)) // -0 takes the f32 form: kept exactly
	case float64(float32(reward)) == reward:
		b = append(b, rewardF32)
		b = le.AppendUint32(b, math.Float32bits(float32(reward)))
	default:
		b = append(b, rewardF64)
		b = le.AppendUint64(b, math.Float64bits(reward))
	}
	return le.AppendUint64(b, math.Float64bits(q))
}

func appendHeader(b []byte, lsn uint64, n int, ms int64, visits uint64) []byte {
	b = binary.AppendUvarint(b, lsn)
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, zigzag(ms))
	return binary.AppendUvarint(b, visits)
}

// Header decodes a log's header: it returns the header's length and
// n, or an error. Only the length and n are needed by most callers.
func Header(b []byte) (hlen, n int, err error) {
	d := decoder{b: b}
	d.uvarint() // lsn
	nn := d.uvarint()
	d.uvarint() // ms
	d.uvarint() // visits
	if d.err != nil {
		return 0, 0, d.err
	}
	if nn == 0 || nn > MaxLen {
		return 0, 0, fmt.Errorf("history of %d entries", nn)
	}
	return d.off, int(nn), nil
}

// LSN returns the LSN in a log's header. REQUIRES: b a valid log.
func LSN(b []byte) uint64 {
	lsn, _ := binary.Uvarint(b)
	return lsn
}

// Push appends e, of the record at lsn, to log b (nil for none),
// dropping the oldest entries beyond max, and returns the log. It reuses
// b's array when it has room: the caller must hold the only reference.
// REQUIRES: b nil or a valid log; max >= 1.
func Push(b []byte, lsn uint64, e Entry, max int) []byte {
	var scratch [64]byte
	if len(b) == 0 {
		out := make([]byte, 0, 32) // a first entry of an integer reward fits
		out = appendHeader(out, lsn, 1, e.MS, e.Visits)
		return appendEntry(out, 0, 0, e.Reward, e.Q)
	}
	d := decoder{b: b}
	d.uvarint()
	n := int(d.uvarint())
	ms := unzigzag(d.uvarint())
	visits := d.uvarint()
	body := b[d.off:]
	for ; n >= max; n-- { // drop the oldest
		body = body[entryLen(body):]
	}
	ent := appendEntry(scratch[:0], e.MS-ms, int64(e.Visits-visits), e.Reward, e.Q)
	var hdr [4 * binary.MaxVarintLen64]byte
	h := appendHeader(hdr[:0], lsn, n+1, e.MS, e.Visits)
	total := len(h) + len(body) + len(ent)
	if cap(b) < total {
		out := make([]byte, total, total+total/4)
		copy(out, h)
		copy(out[len(h):], body)
		copy(out[len(h)+len(body):], ent)
		return out
	}
	b = b[:cap(b)]
	copy(b[len(h):], body) // memmove: body aliases b
	copy(b, h)
	copy(b[len(h)+len(body):], ent)
	return b[:total]
}

// entryLen returns the length of the entry at the start of b.
// REQUIRES: b starts with a valid entry.
func entryLen(b []byte) int {
	d := decoder{b: b}
	d.entry()
	return d.off
}

// Trim drops the oldest entries of a valid log beyond max, returning
// a log that may share b's array.
func Trim(b []byte, max int) []byte {
	d := decoder{b: b}
	lsn := d.uvarint()
	n := int(d.uvarint())
	ms := unzigzag(d.uvarint())
	visits := d.uvarint()
	if n <= max {
		return b
	}
	body := b[d.off:]
	for ; n > max; n-- {
		body = body[entryLen(body):]
	}
	return append(appendHeader(nil, lsn, n, ms, visits), body...)
}

// Decode decodes a log strictly: every varint and kind valid, no
// byte left over, no visit count below zero. It returns the entries oldest
// first and the header's LSN.
func Decode(b []byte) ([]Entry, uint64, error) {
	d := decoder{b: b}
	lsn := d.uvarint()
	n := d.uvarint()
	ms := unzigzag(d.uvarint())
	visits := d.uvarint()
	if d.err != nil {
		return nil, 0, d.err
	}
	if n == 0 || n > MaxLen {
		return nil, 0, fmt.Errorf("history of %d entries", n)
	}
	type diff struct{ dms, dv int64 }
	es := make([]Entry, n)
	ds := make([]diff, n)
	for i := range es {
		ds[i].dms, ds[i].dv, es[i].Reward, es[i].Q = d.entry()
	}
	if d.err != nil {
		return nil, 0, d.err
	}
	if d.off != len(b) {
		return nil, 0, fmt.Errorf("%d bytes past the last history entry", len(b)-d.off)
	}
	for i := len(es) - 1; i >= 0; i-- {
		es[i].MS, es[i].Visits = ms, visits
		if i > 0 {
			// Visits only grow today, but a rollback may lower them:
			// any difference is allowed that does not wrap.
			prev := visits - uint64(ds[i].dv)
			if (ds[i].dv > 0) != (prev < visits) {
				return nil, 0, fmt.Errorf("history entry %d: visits %d less %d wrap", i, visits, ds[i].dv)
			}
			ms -= ds[i].dms
			visits = prev
		}
	}
	return es, lsn, nil
}

// decoder reads a log, keeping the first error and its offset.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.err = fmt.Errorf("bad varint at history byte %d", d.off)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) fixed(n int) []byte {
	if d.err != nil {
		return make([]byte, 8)
	}
	if len(d.b)-d.off < n {
		d.err = fmt.Errorf("history cut short at byte %d", d.off)
		return make([]byte, 8)
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *decoder) entry() (dms, dv int64, reward, q float64) {
	dms = unzigzag(d.uvarint())
	dv = unzigzag(d.uvarint())
	switch k := d.fixed(1)[0]; {
	case k <= 2*rewardInt:
		reward = float64(int(k) - rewardInt)
	case k == rewardF32:
		reward = float64(math.Float32frombits(le.Uint32(d.fixed(4))))
	case k == rewardF64:
		reward = math.Float64frombits(le.Uint64(d.fixed(8)))
	default:
		if d.err == nil {
			d.err = fmt.Errorf("bad reward kind %d at history byte %d", k, d.off-1)
		}
	}
	q = math.Float64frombits(le.Uint64(d.fixed(8)))
	// Rewards and Q are finite (MEM.REWARD refuses others, and the update
	// keeps them so): a NaN or an infinity is damage.
	if d.err == nil && (!finite(reward) || !finite(q)) {
		d.err = fmt.Errorf("history entry before byte %d: reward %v, q %v: not finite", d.off, reward, q)
	}
	return
}

// Section returns a checkpoint's history section holding log: its
// version byte, then the log's bytes (copied).
// REQUIRES: log a valid log.
func Section(log []byte) []byte {
	data := make([]byte, 1+len(log))
	data[0] = SectionVersion
	copy(data[1:], log)
	return data
}

// CheckSection validates a checkpoint's history section: its version and
// its log (Decode).
func CheckSection(data []byte) error {
	if len(data) == 0 || data[0] != SectionVersion {
		v := -1
		if len(data) > 0 {
			v = int(data[0])
		}
		return fmt.Errorf("history section version %d, this build reads %d", v, SectionVersion)
	}
	_, _, err := Decode(data[1:])
	return err
}

// WithLSN returns a copy of log b with the LSN in its header replaced by
// lsn; the entries are unchanged. An import uses it to restart an
// imported memory's history in the importing database's log (LSNs are per
// log, so the exporting database's would be meaningless there).
// A b whose header does not decode is returned unchanged (its section
// check refuses it).
func WithLSN(b []byte, lsn uint64) []byte {
	d := decoder{b: b}
	d.uvarint() // lsn
	n, ms, visits := d.uvarint(), d.uvarint(), d.uvarint()
	if d.err != nil {
		return b
	}
	out := appendHeader(make([]byte, 0, len(b)+10), lsn, int(n), unzigzag(ms), visits)
	return append(out, b[d.off:]...)
}
