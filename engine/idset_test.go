package engine

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestIDSetAscend: ascend from any point visits exactly the ids at least
// that point, in order, across the bitmap/B-tree boundary at 2^32, and
// stops when told.
func TestIDSetAscend(t *testing.T) {
	s := newIDSet()
	rng := rand.New(rand.NewSource(1))
	in := map[uint64]bool{}
	for _, id := range []uint64{0, 1, math.MaxUint32 - 1, math.MaxUint32, math.MaxUint32 + 1, MaxID} {
		in[id] = true
	}
	for len(in) < 5000 {
		switch rng.Intn(3) {
		case 0:
			in[uint64(rng.Intn(100000))] = true
		case 1:
			in[uint64(rng.Uint32())] = true
		default:
			in[uint64(rng.Int63())] = true
		}
	}
	for id := range in {
		s.add(id)
	}
	for id := range in {
		if rng.Intn(4) == 0 {
			s.remove(id)
			delete(in, id)
		}
	}
	s.remove(12345678901234) // absent: no effect
	var all []uint64
	for id := range in {
		all = append(all, id)
	}
	slices.Sort(all)
	if s.len() != len(all) {
		t.Fatalf("len %d, want %d", s.len(), len(all))
	}
	froms := []uint64{0, 1, 2, math.MaxUint32 - 1, math.MaxUint32, math.MaxUint32 + 1, MaxID, MaxID + 1, math.MaxUint64}
	for i := 0; i < 50; i++ {
		froms = append(froms, all[rng.Intn(len(all))], uint64(rng.Int63()))
	}
	for _, from := range froms {
		var got []uint64
		s.ascend(from, func(id uint64) bool { got = append(got, id); return true })
		i, _ := slices.BinarySearch(all, from)
		if want := all[i:]; !slices.Equal(got, want) {
			t.Fatalf("ascend(%d): %d ids, want %d", from, len(got), len(want))
		}
		n := 0
		s.ascend(from, func(uint64) bool { n++; return n < 3 })
		if want := min(3, len(all)-i); n != want {
			t.Fatalf("ascend(%d) stopped after %d calls, want %d", from, n, want)
		}
	}
}

// BenchmarkIDSetAddSparse adds random 63-bit ids (explicit IDs such as
// hashes): the case where a roaring64 bitmap's adds were O(n) each.
func BenchmarkIDSetAddSparse(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	s := newIDSet()
	for i := 0; i < b.N; i++ {
		s.add(uint64(rng.Int63()))
	}
}
