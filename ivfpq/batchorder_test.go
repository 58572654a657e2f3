package ivfpq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPrincipalDirection: rows spread mostly along one axis give that
// axis (either sign), whatever the sample; rows all alike, one row, or a
// NaN give none.
func TestPrincipalDirection(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	const dim, n = 12, 3000
	rows := make([]float32, n*dim)
	for i := range n {
		for j := range dim {
			rows[i*dim+j] = float32(r.NormFloat64()) + 5
		}
		rows[i*dim+7] += float32(r.NormFloat64() * 10) // axis 7 spreads most
	}
	for _, sample := range []int{n, 1024, 100} {
		v := principalDirection(rows, dim, n, sample, 10)
		if v == nil {
			t.Fatalf("sample %d: no direction", sample)
		}
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if math.Abs(norm-1) > 1e-5 || math.Abs(float64(v[7])) < 0.99 {
			t.Fatalf("sample %d: direction %v (norm² %v), want ±axis 7", sample, v, norm)
		}
	}
	same := make([]float32, 50*dim)
	for i := range same {
		same[i] = 3
	}
	if v := principalDirection(same, dim, 50, 1024, 10); v != nil {
		t.Fatalf("rows all alike: direction %v, want none", v)
	}
	if v := principalDirection(rows[:dim], dim, 1, 1024, 10); v != nil {
		t.Fatalf("one row: direction %v, want none", v)
	}
	bad := append([]float32(nil), rows[:100*dim]...)
	bad[5] = float32(math.NaN())
	if v := principalDirection(bad, dim, 100, 1024, 10); v != nil {
		t.Fatalf("a NaN: direction %v, want none", v)
	}
}

// TestBatchOrder: the order is a permutation of the queries sorted by
// their projection on the index's direction, the same on every call.
func TestBatchOrder(t *testing.T) {
	const d, n, nq = 16, 3000, 300
	all := clustered(n+nq, d, 30, 93)
	ix := buildIndex(t, Params{Dim: d, NList: 32, M: 8, Bits: 4, Metric: L2}, all[:n*d], n)
	qs := all[n*d:]
	perm := ix.batchOrder(qs, nq)
	if len(perm) != nq {
		t.Fatalf("%d positions for %d queries", len(perm), nq)
	}
	dir := ix.slabDirection()
	seen := make([]bool, nq)
	prev := float32(math.Inf(-1))
	for _, i := range perm {
		if seen[i] {
			t.Fatalf("query %d placed twice", i)
		}
		seen[i] = true
		var p float32
		for j, x := range qs[int(i)*d : (int(i)+1)*d] {
			p += x * dir[j]
		}
		if p < prev-1e-3*(1+float32(math.Abs(float64(prev)))) {
			t.Fatalf("query %d (projection %v) after one at %v", i, p, prev)
		}
		prev = p
	}
	again := ix.batchOrder(qs, nq)
	for j := range perm {
		if perm[j] != again[j] {
			t.Fatalf("the order changed between calls at %d", j)
		}
	}
	q2 := permuteQueries(qs, d, perm)
	for j, i := range perm {
		for c := range d {
			if q2[j*d+c] != qs[int(i)*d+c] {
				t.Fatalf("permuted query %d differs from query %d", j, i)
			}
		}
	}
}
