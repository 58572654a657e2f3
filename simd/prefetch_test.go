package simd

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPrefetchChangesNothing prefetches slices of every length up to a few
// cache lines at every float offset, including slices that end at an
// unmapped page (guardedFloats on Linux) and empty ones: nothing may fault
// and no value may change.
func TestPrefetchChangesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	buf := make([]float32, 256)
	randFloats(r, buf)
	want := slices.Clone(buf)
	for off := 0; off < 32; off++ {
		for n := 0; off+n <= len(buf) && n <= 80; n++ {
			Prefetch(buf[off : off+n])
		}
	}
	Prefetch([]float32(nil))
	if !slices.Equal(buf, want) {
		t.Fatal("Prefetch changed its slice")
	}
}

// BenchmarkRerank scores k·refine random rows of a table far larger than
// the caches, as ivfpq's re-rank does, with and without prefetching the
// rows first.
func BenchmarkRerank(b *testing.B) {
	const dim, rows, cands = 128, 1 << 20, 80
	r := rand.New(rand.NewPCG(1, 2))
	table := make([]float32, rows*dim)
	randFloats(r, table[:dim*1024])
	for i := dim * 1024; i < len(table); i += dim * 1024 {
		copy(table[i:], table[:dim*1024])
	}
	q := table[:dim]
	pick := make([]int, cands*1024)
	for i := range pick {
		pick[i] = r.IntN(rows)
	}
	for _, pf := range []bool{false, true} {
		name := "plain"
		if pf {
			name = "prefetch"
		}
		b.Run(name, func(b *testing.B) {
			var sink float32
			for i := 0; b.Loop(); i++ {
				set := pick[(i%1024)*cands : (i%1024+1)*cands]
				if pf {
					for _, row := range set {
						Prefetch(table[row*dim : (row+1)*dim])
					}
				}
				for _, row := range set {
					sink += L2Sq(q, table[row*dim:(row+1)*dim])
				}
			}
			_ = sink
		})
	}
}

// TestPrefetchBytesChangesNothing is TestPrefetchChangesNothing for
// byte slices, at every byte offset and length up to a few lines.
func TestPrefetchBytesChangesNothing(t *testing.T) {
	buf := make([]byte, 512)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := slices.Clone(buf)
	for off := 0; off < 64; off++ {
		for n := 0; off+n <= len(buf) && n <= 300; n++ {
			Prefetch(buf[off : off+n])
		}
	}
	Prefetch([]byte(nil))
	if !slices.Equal(buf, want) {
		t.Fatal("Prefetch changed its byte slice")
	}
}
