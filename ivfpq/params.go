package ivfpq

import (
	"errors"
	"fmt"
)

// Metric selects how similarity is measured.
type Metric int

const (
	// L2 ranks by squared Euclidean distance; Neighbor.Sim is its negation.
	L2 Metric = iota
	// IP ranks by inner product; Neighbor.Sim is the dot product. Cosine
	// collections store normalised vectors and use IP.
	IP
)

func (m Metric) String() string {
	switch m {
	case L2:
		return "l2"
	case IP:
		return "ip"
	}
	return fmt.Sprintf("Metric(%d)", int(m))
}

// Params fixes the shape of an index. They are chosen at Train and stored in
// the index file; they never change afterwards.
type Params struct {
	Dim    int    // vector dimension
	NList  int    // number of coarse centroids (inverted lists)
	M      int    // number of PQ sub-spaces, at most Dim; see Params.subDim for their widths
	Bits   int    // bits per sub-space code: 8 (table look-ups) or 4 (fast scan)
	Metric Metric // L2 or IP

	// unitIP is set by Train for IP indexes whose training sample has unit
	// norm (cosine collections): candidates are then scored with the L2
	// asymmetric distance, which for unit-norm vectors ranks exactly as the
	// inner product does but, unlike the inner-product ADC, is not biased
	// towards reconstructions with a larger norm. Stored in the file header;
	// never set by callers (Index.Params clears it).
	unitIP bool
}

// l2ADC reports whether candidates are scored by L2 asymmetric distance.
func (p Params) l2ADC() bool { return p.Metric == L2 || p.unitIP }

// Sentinel errors. Callers compare with errors.Is.
var (
	// ErrBadParams reports Params or arguments that cannot describe an index.
	ErrBadParams = errors.New("ivfpq: invalid parameters")
	// ErrCorrupt reports an index file that fails its structural checks or its
	// checksum. The file is refused; nothing is loaded from it.
	ErrCorrupt = errors.New("ivfpq: corrupt index file")
	// ErrNotIndexFile reports a file that does not start with the index
	// file's magic: some other file, not a damaged index. Such an error
	// also matches ErrCorrupt, so a caller that rebuilds a damaged index
	// rebuilds over it too; a tool reading a path a person gave says "not
	// an index file" instead of "corrupt".
	ErrNotIndexFile = errors.New("ivfpq: not an index file")
	// ErrVersion reports an index file written by an unknown format version.
	ErrVersion = errors.New("ivfpq: unsupported index file version")
	// ErrOutOfOrder reports an Add whose row is not Rows().
	ErrOutOfOrder = errors.New("ivfpq: rows must be added in order")
	// ErrClosed reports use of an index after Close.
	ErrClosed = errors.New("ivfpq: index closed")
	// ErrTermRange reports a Save refused because a list's L2 terms cannot
	// be stored in 16-bit fixed point (format version 4): a term is NaN or
	// infinite, or the list's terms span more than float32 holds. Only
	// vectors far beyond the engine's MaxComponent produce such terms; the
	// old file, if any, is left in place.
	ErrTermRange = errors.New("ivfpq: L2 terms not finite or out of float32 range")
)

// Validate reports whether p describes a buildable index.
func (p Params) Validate() error {
	switch {
	case p.Dim <= 0:
		return fmt.Errorf("%w: Dim %d must be positive", ErrBadParams, p.Dim)
	case p.NList <= 0 || p.NList > 1<<24:
		return fmt.Errorf("%w: NList %d out of range [1, 2^24]", ErrBadParams, p.NList)
	case p.M <= 0 || p.M > 256 || p.M > p.Dim:
		return fmt.Errorf("%w: M %d must be in [1, min(Dim %d, 256)]", ErrBadParams, p.M, p.Dim)
	case p.Bits != 4 && p.Bits != 8:
		return fmt.Errorf("%w: Bits %d must be 4 or 8", ErrBadParams, p.Bits)
	case p.Metric != L2 && p.Metric != IP:
		return fmt.Errorf("%w: unknown metric %d", ErrBadParams, int(p.Metric))
	}
	return nil
}

// ksub is the number of centroids per sub-space.
func (p Params) ksub() int { return 1 << p.Bits }

// Sub-spaces need not be of equal width, so that M need not divide Dim
// (128 dimensions as 48 sub-spaces give 24-byte 4-bit codes): the first
// Dim mod M sub-spaces ("wide") have ⌈Dim/M⌉ dimensions and the others
// ⌊Dim/M⌋. Sub-space s covers dimensions [subOff(s), subOff(s)+subDim(s))
// in order, and its codebook, 2^Bits centroids of subDim(s) floats, starts
// at float ksub·subOff(s) of the [M][ksub][·] codebook array, which holds
// ksub·Dim floats in all. When M divides Dim every sub-space has Dim/M
// dimensions and the layout is the one format version 2 describes.

// subDim is the width of sub-space s. REQUIRES: p valid, 0 <= s < M.
func (p Params) subDim(s int) int {
	if s < p.wideSubs() {
		return p.Dim/p.M + 1
	}
	return p.Dim / p.M
}

// subOff is the first dimension of sub-space s (s == M gives Dim).
// REQUIRES: p valid, 0 <= s <= M.
func (p Params) subOff(s int) int { return s*(p.Dim/p.M) + min(s, p.wideSubs()) }

// wideSubs is how many sub-spaces (the first ones) have ⌈Dim/M⌉ dimensions;
// 0 when M divides Dim.
func (p Params) wideSubs() int { return p.Dim % p.M }

// bookLen is the number of floats of the codebooks: ksub per dimension.
func (p Params) bookLen() int { return p.ksub() * p.Dim }

// hasTerms reports whether each stored vector carries a float32 L2 term
// ‖r̂‖² + 2⟨c, r̂⟩ (indexes scored by L2; see search.go).
func (p Params) hasTerms() bool { return p.l2ADC() }

// codeSize is the number of bytes one vector's PQ code occupies.
func (p Params) codeSize() int {
	if p.Bits == 8 {
		return p.M
	}
	return (p.M + 1) / 2
}

// DefaultParams picks parameters for a collection of about n vectors of the
// given dimension: 4-bit fast-scan codes of about 0.4·dim sub-spaces (a
// fifth of a byte per dimension) over about 2·√n lists.
//
//   - NList ≈ 2·√n rounded to the nearest power of two (2048 for a million,
//     512 for 100,000), between 1 and 65536, and never more than n/39 lists
//     (so k-means sees at least 39 points per centroid, the minimum FAISS
//     warns below);
//   - M = DefaultM(dim, 4): 52 for dim 128, a 26-byte code;
//   - Bits = 4, or 8 (with M = DefaultM(dim, 8)) when dim is below 4.
//
// Why this shape: on sift1m-deb, with queries from other images than the
// base, IVF2048,PQ64x4 reaches recall@10 0.95 at 0.75–0.85 of the CPU time
// per query of the previous default, IVF4096,PQ32x8, and 0.99 at about 0.7,
// with the same 32 bytes a code; at 100,000 vectors IVF512,PQ64x4 needs
// 0.57–0.73 of IVF1024,PQ32x8's time at 0.95 and 0.98 and builds ten times
// faster (16 centroids a sub-space instead of 256). Figures and commands:
// bench/README.md, "The default index shape". The code then shrank from
// dim/4 to 13·dim/64 bytes (PQ52x4 at dim 128) to keep the index within a
// quarter of hnswlib's graph; see DefaultM. Half or twice the lists at 1M
// (IVF1024, IVF4096) win at recall 0.99 and lose at 0.95 in batched search,
// and 4096 lists outgrow that quarter; bench/batch/README.md, "Index shape at 1M".
func DefaultParams(n, dim int, metric Metric) Params {
	nlist := 1
	// Doubling while 2·nlist ≤ 1.5·(2√n) rounds 2√n to the nearest power of two.
	for nlist*2 <= 3*isqrt(n) && nlist*2 <= 65536 && nlist*2*39 <= n {
		nlist *= 2
	}
	bits := 4
	m := DefaultM(dim, bits)
	if m == 0 {
		bits = 8
		m = DefaultM(dim, bits)
	}
	return Params{Dim: dim, NList: nlist, M: m, Bits: bits, Metric: metric}
}

// DefaultM returns the number of PQ sub-spaces for codes of the given bits
// per sub-space.
//
//   - 8 bits: the largest divisor of dim not above dim/4 (sub-spaces of at
//     least 4 dimensions; 32 for dim 128), capped at 64.
//   - 4 bits: 13/32 of dim rounded to an even number (so a code is whole
//     bytes), at most 128; 52 for dim 128, a 26-byte code over 24
//     sub-spaces of 3 dimensions and 28 of 2 (M need not divide dim,
//     params.go's wideSubs). 0 when dim is below 4.
//
// Why 13/32 of dim for 4 bits rather than dim/2 (64 at dim 128, the
// default before): at 1M SIFT vectors the index, besides the raw vectors,
// must stay within a quarter of hnswlib's graph (144.6 MB), and with
// 4-byte row ids and 2-byte terms 32-byte codes make it 41.6 MB where
// 26-byte ones make it 35.4 MB. The smaller code costs little speed: it
// reaches recall@10 0.95 with the same CPU per query as 32 bytes (fewer
// bytes scanned per list, a few more lists), and 0.99 with 10–20% more
// (bench/README.md, "The default shape at 1M on Zen 5"). In batched search
// the gap is larger: 32-byte codes took 0.79–1.0 of the CPU at 0.95 and
// 0.65–0.76 at 0.99 (5 rounds; bench/batch/README.md, "Index shape at 1M").
func DefaultM(dim, bits int) int {
	if bits == 8 {
		m := 1
		for c := 1; c <= dim/4 && c <= 64; c++ {
			if dim%c == 0 {
				m = c
			}
		}
		return m
	}
	if dim < 4 {
		return 0
	}
	return min(2*((13*dim+32)/64), 128)
}

func isqrt(n int) int {
	if n <= 0 {
		return 0
	}
	r := 1
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}

// SearchParams are per-call search settings. Nothing is stored on the index,
// so concurrent searches with different settings are independent.
type SearchParams struct {
	// NProbe is the number of nearest inverted lists scanned.
	// <= 0 means DefaultNProbe(NList).
	NProbe int
	// Refine is the re-rank factor: the best k·Refine candidates by
	// approximate distance are re-scored exactly from the raw vectors.
	// <= 0 means DefaultRefine (8 for 8-bit codes, 16 for 4-bit codes).
	Refine int
	// NoPrune turns off list pruning (prune.go): every one of the NProbe
	// lists is scanned even when the Voronoi bound proves it cannot hold
	// one of the k nearest rows. For tests and for measuring what pruning
	// saves.
	NoPrune bool
	// PruneFactor scales the pruning test (prune.go): from the 8th probed
	// list on, a list is skipped when the lower bound on the distance of
	// its rows exceeds PruneFactor times the k-th smallest exact distance
	// found so far. 1 is lossless: a skipped list provably holds none of
	// the k nearest rows, so recall never drops. Below 1 the search stops
	// early where the bound, which is loose, says a list is unlikely to
	// help: queries whose neighbours are found in the first lists scan
	// fewer lists, hard ones about as many, so at a given recall a smaller
	// factor with a larger NProbe scans fewer codes than factor 1.
	// 0 means DefaultPruneFactor; otherwise it must be in (0, 1].
	PruneFactor float32
}

// DefaultPruneFactor is the PruneFactor used when SearchParams.PruneFactor
// is 0. At 0.5, at 1M (IVF2048,PQ52x4, nprobe 32–256), searches scanned
// 10–40% fewer lists than at 1 for a loss of recall@10 of at most 0.0003,
// on sift1m-deb's queries and on bench/queryset's (bench/README.md, "On a
// Xeon …: an adaptive stop").
const DefaultPruneFactor = 0.5

// pruneFactor returns sp's pruning factor, DefaultPruneFactor for 0, or an
// ErrBadParams error outside (0, 1] (NaN included).
func (sp SearchParams) pruneFactor() (float32, error) {
	f := sp.PruneFactor
	if f == 0 {
		return DefaultPruneFactor, nil
	}
	if !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("%w: PruneFactor must be in (0, 1], got %v", ErrBadParams, f)
	}
	return f, nil
}

// DefaultNProbe is the nprobe used when SearchParams.NProbe <= 0: √nlist
// rounded down, but at least minDefaultNProbe, and at most nlist (24 at
// NList 256, 32 at 1024, 64 at 4096). The share of lists a query must scan
// for a given recall falls as lists multiply, but more slowly than the
// nlist/64 used before: on sift1m-deb's held-out queries at the
// DefaultParams shape, 4 probes of 256 gave recall@10 0.76 on 10k vectors
// and 16 of 1024 0.92 on 100k, where 24 of 256 give 0.971, 32 of 1024
// 0.965 and 64 of 4096 0.979 on 1M (bench/README.md). With DefaultParams
// (NList ≈ 4·√n) a query scans about n/√nlist ≈ n^¾/2 codes.
func DefaultNProbe(nlist int) int {
	return min(max(isqrt(nlist), minDefaultNProbe), max(nlist, 1))
}

// minDefaultNProbe is the fewest lists DefaultNProbe probes: √256 = 16
// probes gave recall@10 0.943 on sift1m-deb's first 10k vectors, 24 0.971.
const minDefaultNProbe = 24

// DefaultRefine returns the re-rank factor used when SearchParams.Refine <= 0.
func DefaultRefine(bits int) int {
	if bits == 4 {
		return 16
	}
	return 8
}

// Neighbor is one search result.
type Neighbor struct {
	Row uint32  // row number given to Add
	Sim float32 // similarity, higher is better: -L2² or dot product
}

// VectorSource gives raw vectors by row number (the engine's mmap'd vector
// store). The returned slice is only read, and only during the call.
type VectorSource interface {
	Vector(row uint32) []float32
}
