package ivfpq

import (
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
