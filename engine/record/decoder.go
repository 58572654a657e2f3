package record

import (
	"fmt"
	"math"
)

// Decoder reads little-endian fields from B and remembers the first short
// read in Err: once set, every read returns zeros and consumes nothing,
// so a decoder reads a whole body and checks once (Done).
type Decoder struct {
	B   []byte // the bytes not yet read
	Err bool   // a read ran past the end of B
}

// Take returns the next n bytes, which alias B. On a short read it sets
// d.Err and returns 8 zero bytes (or fewer), enough for the fixed-size
// readers below: never a buffer of the length asked for, which may be a
// length field read from damaged input (up to 4 GiB).
func (d *Decoder) Take(n int) []byte {
	if d.Err || n < 0 || len(d.B) < n {
		d.Err = true
		return make([]byte, min(max(n, 0), 8))
	}
	p := d.B[:n]
	d.B = d.B[n:]
	return p
}

// U8 reads a byte.
func (d *Decoder) U8() byte { return d.Take(1)[0] }

// U16 reads a little-endian uint16.
func (d *Decoder) U16() uint16 { return le.Uint16(d.Take(2)) }

// U32 reads a little-endian uint32.
func (d *Decoder) U32() uint32 { return le.Uint32(d.Take(4)) }

// U64 reads a little-endian uint64.
func (d *Decoder) U64() uint64 { return le.Uint64(d.Take(8)) }

// F64 reads a little-endian float64.
func (d *Decoder) F64() float64 { return math.Float64frombits(d.U64()) }

// Done reports a short or over-long body as ErrBad, naming its kind.
func (d *Decoder) Done(kind string) error {
	if d.Err || len(d.B) != 0 {
		return fmt.Errorf("%w: bad %s record", ErrBad, kind)
	}
	return nil
}
