package ivfpq

import (
	"math/rand/v2"
	"testing"
)

// benchAssign measures nearest-centroid assignment, the inner loop of
// training and adding.
func benchAssign(b *testing.B, n, d, k int) {
	x := clustered(n, d, 50, 1)
	cent := clustered(k, d, 50, 2)
	labels := make([]int32, n)
	var s assignScratch
	b.SetBytes(int64(n * k * d * 4))
	for b.Loop() {
		assignRange(x, d, cent, k, 0, n, labels, nil, &s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n*k), "ns/pair")
}

func BenchmarkAssignCoarse4096x128(b *testing.B) { benchAssign(b, 256, 128, 4096) }
func BenchmarkAssignPQ256x4(b *testing.B)        { benchAssign(b, 4096, 4, 256) }

// benchSearch measures one query at a time on a clustered 50k × 64 set,
// through Search, or SearchFiltered with no filter when filtered is set
// (what the engine runs for an unfiltered retrieval: the two should cost
// the same).
func benchSearch(b *testing.B, bits int, metric Metric, filtered ...bool) {
	const n, d = 50000, 64
	base := clustered(n+100, d, 500, 3)
	if metric == IP {
		normalize(base, d)
	}
	p := Params{Dim: d, NList: 256, M: 16, Bits: bits, Metric: metric}
	if bits == 4 {
		p.M = 32
	}
	ix := buildIndex(b, p, base[:n*d], 20000)
	src := sliceSource{base, d}
	sp := SearchParams{NProbe: 16, Refine: 8}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q := base[(n+i%100)*d:][:d]
		var err error
		if len(filtered) > 0 && filtered[0] {
			_, _, err = ix.SearchFiltered(q, 10, sp, Filter{}, src)
		} else {
			_, err = ix.Search(q, 10, sp, nil, src)
		}
		if err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkSearchL2PQ8(b *testing.B) { benchSearch(b, 8, L2) }
func BenchmarkSearchL2PQ4(b *testing.B) { benchSearch(b, 4, L2) }
func BenchmarkSearchIPPQ8(b *testing.B) { benchSearch(b, 8, IP) }

func BenchmarkSearchFilteredNoFilterL2PQ8(b *testing.B) { benchSearch(b, 8, L2, true) }
func BenchmarkSearchFilteredNoFilterL2PQ4(b *testing.B) { benchSearch(b, 4, L2, true) }

// BenchmarkCandidates feeds the candidate collector (160 kept, k 10 at
// Refine 16) 18,000 scores, as many as a search of IVF2048,PQ64x4 at
// nprobe 32 scores at 1M, pushing only those below worst() as the scan
// does: the old heap (topK) against the buffer with selection (candSet).
// The scores fall slowly along the stream, as they do when lists are
// probed nearest first.
func BenchmarkCandidates(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	stream := make([]float32, 18000)
	for i := range stream {
		stream[i] = r.Float32() * (1 + float32(len(stream)-i)/float32(len(stream)))
	}
	b.Run("heap", func(b *testing.B) {
		var h topK
		for b.Loop() {
			h.reset(160)
			for i, s := range stream {
				if s < h.worst() {
					h.push(s, uint32(i))
				}
			}
		}
	})
	b.Run("buffer", func(b *testing.B) {
		var c candSet
		for b.Loop() {
			c.reset(160, nil)
			for i, s := range stream {
				if s < c.worst() {
					c.push(s, uint32(i))
				}
			}
			c.settle()
		}
	})
}
