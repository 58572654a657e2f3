package histo

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	subBits = 4            // log2 of the buckets per power of two
	sub     = 1 << subBits // buckets per power of two
	// maxExp is the first power of two past the last regular bucket:
	// values of 2^maxExp ns or more go to the overflow bucket.
	maxExp = 36
	// NumBuckets is the number of buckets, the overflow bucket included.
	NumBuckets = (maxExp-subBits+1)*sub + 1
	overflow   = NumBuckets - 1
)

// Histogram counts durations in fixed buckets. The zero value is empty and
// ready to use. It must not be copied after first use.
type Histogram struct {
	sum     atomic.Uint64 // total of all recorded values, in ns
	buckets [NumBuckets]atomic.Uint64
}

// bucketOf returns the bucket of v nanoseconds.
func bucketOf(v uint64) int {
	if v < sub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // 2^e <= v < 2^(e+1), e >= subBits
	if e >= maxExp {
		return overflow
	}
	m := (v >> (e - subBits)) & (sub - 1)
	return (e-subBits+1)*sub + int(m)
}

// Upper returns the smallest value (ns) above bucket i: bucket i holds
// [Upper(i-1), Upper(i)). The overflow bucket's Upper is MaxUint64.
func Upper(i int) uint64 {
	if i < sub {
		return uint64(i) + 1
	}
	if i >= overflow {
		return math.MaxUint64
	}
	e := i/sub + subBits - 1
	m := uint64(i % sub)
	return (sub + m + 1) << (e - subBits)
}

// Record adds one duration. Negative durations count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.buckets[bucketOf(v)].Add(1)
	h.sum.Add(v)
}

// Sum returns the total of the recorded values, in ns.
func (h *Histogram) Sum() uint64 { return h.sum.Load() }

// Snapshot is a copy of a Histogram's counters.
type Snapshot struct {
	Count   uint64 // values recorded: the sum of Buckets
	Sum     uint64 // their total, in ns
	Buckets [NumBuckets]uint64
}

// Snapshot copies the histogram's counters (see the package comment on
// consistency). Buckets are read before the sum, so Sum may include values
// whose bucket was read as not yet counted, never the reverse.
func (h *Histogram) Snapshot(s *Snapshot) {
	s.Count = 0
	for i := range h.buckets {
		n := h.buckets[i].Load()
		s.Buckets[i] = n
		s.Count += n
	}
	s.Sum = h.sum.Load()
}

// Quantile returns the highest value of the bucket that holds the q-th
// quantile (0 < q <= 1) of the recorded values, or 0 if none was recorded.
// A quantile in the overflow bucket is reported as 2^36 ns.
func (s *Snapshot) Quantile(q float64) time.Duration {
	if s.Count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.Count)))
	rank = min(max(rank, 1), s.Count)
	var seen uint64
	for i, n := range s.Buckets {
		seen += n
		if seen >= rank {
			if i == overflow {
				return time.Duration(1) << maxExp
			}
			return time.Duration(Upper(i) - 1)
		}
	}
	return time.Duration(1) << maxExp // unreachable: Count is the sum of Buckets
}

// CumulativeAt returns how many values were below 2^e ns (0 <= e <=
// maxExp): an exact count, since every power of two is a bucket bound.
func (s *Snapshot) CumulativeAt(e int) uint64 {
	limit := uint64(1) << e
	var n uint64
	for i := 0; i < overflow && Upper(i) <= limit; i++ {
		n += s.Buckets[i]
	}
	return n
}

// MaxExp is the exponent of the largest power-of-two bound CumulativeAt
// accepts.
const MaxExp = maxExp
