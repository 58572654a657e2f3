package ivfpq

import (
	"sync/atomic"

	"github.com/memrl/memrl/simd"
)

// Precomputed L2 tables, used by 4-bit L2 indexes (8-bit L2 indexes store the
// list-dependent part per vector instead; see search.go). For a vector
// stored in list l with residual code
// (k_1..k_M), its squared distance to q splits as
//
//	‖q − c_l − r‖² = ‖q − c_l‖² + Σ_m ( ‖r_mk‖² + 2⟨c_l,m, r_mk⟩ ) − 2 Σ_m ⟨q_m, r_mk⟩
//
// The first term is the coarse distance already computed to pick the lists;
// the last comes from one dot-product table per query, shared by all lists;
// the middle depends only on the list and the code, and is the per-list
// table T_l ([M][ksub]). T_l is computed the first time list l is probed and
// kept (as FAISS's "precomputed tables" are), so a probe costs one table
// subtraction instead of a full distance table. The cache is bounded: when
// NList·M·ksub floats exceed maxPrecompBytes, tables are not kept and the
// per-list distance table is computed directly.

const maxPrecompBytes = 256 << 20

// usePrecomp reports whether L2 searches use cached per-list tables.
func (ix *Index) usePrecomp() bool {
	return ix.p.l2ADC() && !ix.p.hasTerms() && int64(ix.p.NList)*int64(ix.p.M*ix.p.ksub())*4 <= maxPrecompBytes
}

// initPrecomp sets up the empty cache and the code norms ‖r_mk‖².
func (ix *Index) initPrecomp() {
	p := ix.p
	ksub, dsub := p.ksub(), p.dsub()
	ix.codeNorm = make([]float32, p.M*ksub)
	for i := range ix.codeNorm {
		r := ix.book[i*dsub : (i+1)*dsub]
		ix.codeNorm[i] = simd.Dot(r, r)
	}
	if ix.usePrecomp() {
		ix.precomp = make([]atomic.Pointer[[]float32], p.NList)
	}
}

// listTable returns T_l, computing and caching it on first use. Concurrent
// first uses may both compute it; they store equal tables.
func (ix *Index) listTable(l int) []float32 {
	if t := ix.precomp[l].Load(); t != nil {
		return *t
	}
	p := ix.p
	t := make([]float32, p.M*p.ksub())
	simd.PQLUTDot(ix.coarse[l*p.Dim:(l+1)*p.Dim], ix.book, p.M, p.ksub(), t)
	for i, n := range ix.codeNorm {
		t[i] = n + 2*t[i]
	}
	ix.precomp[l].Store(&t)
	return t
}

// combineTables sets lut = t - 2·s.
func combineTables(lut, t, s []float32) {
	t = t[:len(lut)]
	s = s[:len(lut)]
	for i := range lut {
		lut[i] = t[i] - 2*s[i]
	}
}
