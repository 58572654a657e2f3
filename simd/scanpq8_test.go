package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestScanPQ8(t *testing.T) {
	forEachLevel(t, func(t testing.TB, level string) {
		r := rand.New(rand.NewPCG(15, 16))
		for m := 1; m <= 70; m++ {
			for _, n := range []int{0, 1, 2, 5, 17} {
				codes := make([]byte, n*m+1)[1:] // odd start
				for i := range codes {
					codes[i] = byte(r.IntN(256))
				}
				lut := tail(r, m*256, 1)
				buf := make([]float32, n+1)
				buf[n] = 777
				out := buf[:n:n]
				ScanPQ8(codes, m, lut, out)
				if buf[n] != 777 {
					t.Fatalf("%s m=%d n=%d: wrote past out", level, m, n)
				}
				ref := make([]float32, n)
				scanPQ8Generic(codes, m, lut, ref)
				for i := range out {
					var abs float64
					for j := 0; j < m; j++ {
						abs += math.Abs(float64(lut[j*256+int(codes[i*m+j])]))
					}
					if !near(out[i], float64(ref[i]), abs, 2*m) {
						t.Fatalf("%s m=%d n=%d code %d: got %g reference %g", level, m, n, i, out[i], ref[i])
					}
				}
			}
		}
	})
}

// TestScanPQ8Go checks the portable fast version directly (the generic
// level runs it, but this keeps it covered whatever the CPU).
func TestScanPQ8Go(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for m := 1; m <= 20; m++ {
		codes := make([]byte, 9*m)
		for i := range codes {
			codes[i] = byte(r.IntN(256))
		}
		lut := tail(r, m*256, 0)
		got, want := make([]float32, 9), make([]float32, 9)
		scanPQ8Go(codes, m, lut, got)
		scanPQ8Generic(codes, m, lut, want)
		for i := range got {
			var abs float64
			for j := 0; j < m; j++ {
				abs += math.Abs(float64(lut[j*256+int(codes[i*m+j])]))
			}
			if !near(got[i], float64(want[i]), abs, 2*m) {
				t.Fatalf("m=%d code %d: got %g want %g", m, i, got[i], want[i])
			}
		}
	}
}
