package simd

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchLevels runs f as a sub-benchmark per supported level, named by level.
func benchLevels(b *testing.B, f func(b *testing.B)) {
	start := Level()
	defer SetLevel(start)
	for _, l := range Levels() {
		b.Run(l, func(b *testing.B) {
			if err := SetLevel(l); err != nil {
				b.Fatal(err)
			}
			f(b)
		})
	}
}

var sink float32

func BenchmarkL2Sq(b *testing.B) { benchPair(b, L2Sq) }
func BenchmarkDot(b *testing.B)  { benchPair(b, Dot) }

func benchPair(b *testing.B, f func(a, b []float32) float32) {
	for _, d := range []int{128, 768, 1536} {
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			x, y := tail(r, d, 0), tail(r, d, 0)
			benchLevels(b, func(b *testing.B) {
				b.SetBytes(int64(8 * d))
				var s float32
				for b.Loop() {
					s += f(x, y)
				}
				sink = s
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "vectors/s")
			})
		})
	}
}

func BenchmarkL2SqBatch(b *testing.B) { benchBatch(b, L2SqBatch) }
func BenchmarkDotBatch(b *testing.B)  { benchBatch(b, DotBatch) }

// benchBatch scores one query against 1024 rows (PQ sub-vector dimensions
// up to full embeddings); vectors/s counts rows.
func benchBatch(b *testing.B, f func(q, rows, out []float32)) {
	const n = 1024
	for _, d := range []int{4, 8, 16, 128, 768} {
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			q, rows, out := tail(r, d, 0), tail(r, n*d, 0), make([]float32, n)
			benchLevels(b, func(b *testing.B) {
				b.SetBytes(int64(4 * n * d))
				for b.Loop() {
					f(q, rows, out)
				}
				b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "vectors/s")
			})
		})
	}
}

// BenchmarkPQLUTL2: d=128, M=32 (dsub 4) and M=16 (dsub 8), ksub 256.
func BenchmarkPQLUTL2(b *testing.B) {
	for _, m := range []int{16, 32, 64} {
		b.Run(fmt.Sprintf("d=128/M=%d", m), func(b *testing.B) {
			const d, ksub = 128, 256
			r := rand.New(rand.NewPCG(1, 1))
			q, cents, lut := tail(r, d, 0), tail(r, ksub*d, 0), make([]float32, m*ksub)
			benchLevels(b, func(b *testing.B) {
				for b.Loop() {
					PQLUTL2(q, cents, m, ksub, lut)
				}
			})
		})
	}
}

// BenchmarkFastScan4 scans 64 blocks (2048 codes, L1/L2 resident) per
// op; codes/s is per core.
func BenchmarkFastScan4(b *testing.B) {
	const nb = 64
	for _, m := range []int{16, 32, 64} {
		b.Run(fmt.Sprintf("M=%d", m), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			codes, lut := fsInput(r, m, nb, 255)
			sums, masks := make([]uint16, nb*FastScanBlock), make([]uint32, nb)
			benchLevels(b, func(b *testing.B) {
				b.SetBytes(int64(len(codes)))
				for b.Loop() {
					FastScan4(codes, m, lut, uint16(m*64), sums, masks)
				}
				b.ReportMetric(float64(b.N)*nb*FastScanBlock/b.Elapsed().Seconds(), "codes/s")
			})
		})
	}
}

// BenchmarkFastScan4Short is FastScan4 over the short runs a search makes
// (ivfpq scans a list in chunks of 256 codes, and a short list is one or
// two blocks), M=52 as in the default 1M index: the cost a call pays
// before its first block shows here.
func BenchmarkFastScan4Short(b *testing.B) {
	const m = 52
	for _, nb := range []int{1, 8} {
		b.Run(fmt.Sprintf("blocks=%d", nb), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			codes, lut := fsInput(r, m, nb, 255)
			sums, masks := make([]uint16, nb*FastScanBlock), make([]uint32, nb)
			benchLevels(b, func(b *testing.B) {
				for b.Loop() {
					FastScan4(codes, m, lut, uint16(m*64), sums, masks)
				}
				b.ReportMetric(float64(b.N)*float64(nb)*FastScanBlock/b.Elapsed().Seconds(), "codes/s")
			})
		})
	}
}

// BenchmarkScanPQ8 scans 1024 codes of M bytes against a [M][256] LUT.
func BenchmarkScanPQ8(b *testing.B) {
	const n = 1024
	for _, m := range []int{16, 32, 64} {
		b.Run(fmt.Sprintf("M=%d", m), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			codes := make([]byte, n*m)
			for i := range codes {
				codes[i] = byte(r.IntN(256))
			}
			lut, out := tail(r, m*256, 0), make([]float32, n)
			run := func(b *testing.B, f func(codes []byte, m int, lut, out []float32)) {
				b.SetBytes(int64(len(codes)))
				for b.Loop() {
					f(codes, m, lut, out)
				}
				b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "codes/s")
			}
			b.Run("reference", func(b *testing.B) { run(b, scanPQ8Generic) })
			benchLevels(b, func(b *testing.B) { run(b, ScanPQ8) })
		})
	}
}

// BenchmarkCoarse4096 is ivfpq's coarse step at 1M (4,096 centroids of
// 128 floats, 2 MB): L2SqBatch over the row-major centroids against
// DotBlocked over the blocked ones (the distance then needs only the
// precomputed norms added).
func BenchmarkCoarse4096(b *testing.B) {
	const n, dim = 4096, 128
	r := rand.New(rand.NewPCG(5, 6))
	rows := make([]float32, n*dim)
	randFloats(r, rows)
	q := rows[:dim]
	blk := Blocked(rows, dim)
	out := make([]float32, n)
	b.Run("L2SqBatch", func(b *testing.B) {
		benchLevels(b, func(b *testing.B) {
			for b.Loop() {
				L2SqBatch(q, rows, out)
			}
		})
	})
	b.Run("DotBlocked", func(b *testing.B) {
		benchLevels(b, func(b *testing.B) {
			for b.Loop() {
				DotBlocked(q, blk, out)
			}
		})
	})
	blk16 := BlockedF16(rows, dim)
	b.Run("DotBlockedF16", func(b *testing.B) {
		benchLevels(b, func(b *testing.B) {
			for b.Loop() {
				DotBlockedF16(q, blk16, out)
			}
		})
	})
}

// BenchmarkScoreMask turns one 256-vector chunk's sums into pass bits with
// its stored terms, as ivfpq's 4-bit L2 scan does per chunk (a bound that
// passes about one vector in six); codes/s is per core.
func BenchmarkScoreMask(b *testing.B) {
	const n = 256
	r := rand.New(rand.NewPCG(9, 10))
	sums := make([]uint16, n)
	terms := make([]float32, n)
	for i := range sums {
		sums[i] = uint16(r.IntN(8000))
		terms[i] = r.Float32() * 1000
	}
	masks := make([]uint32, n/FastScanBlock)
	benchLevels(b, func(b *testing.B) {
		for b.Loop() {
			ScoreMask(sums, 0.25, 100, terms, 900, masks)
		}
		b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "codes/s")
	})
}

// BenchmarkScoreMask16 is BenchmarkScoreMask with 16-bit fixed-point terms
// (ivfpq's saved format version 4), the same scores to within the step.
func BenchmarkScoreMask16(b *testing.B) {
	const n = 256
	r := rand.New(rand.NewPCG(9, 10))
	sums := make([]uint16, n)
	terms := make([]uint16, n)
	for i := range sums {
		sums[i] = uint16(r.IntN(8000))
		terms[i] = uint16(r.Float32() * 65535)
	}
	masks := make([]uint32, n/FastScanBlock)
	benchLevels(b, func(b *testing.B) {
		for b.Loop() {
			ScoreMask16(sums, 0.25, 100, terms, 1000.0/65535, 900, masks)
		}
		b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "codes/s")
	})
}
