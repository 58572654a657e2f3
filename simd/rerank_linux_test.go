package simd

import (
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkRerankHuge is BenchmarkRerank on a 512 MB table in huge pages
// (the engine keeps its re-rank rows in vfs.AllocResident's huge pages),
// comparing ways of ordering the rows' loads: every row prefetched before
// any is scored (all), each row's lines asked for d rows ahead of the one
// scored (aheadD), all prefetched after sorting by address (sorted), and
// the batch's way, the next query's rows prefetched before this one's are
// scored (nextq), and the batch's stream d rows ahead across queries
// (streamD).
func BenchmarkRerankHuge(b *testing.B) {
	const dim, rows, cands, sets = 128, 1 << 20, 80, 1024
	size := rows * dim * 4
	const huge = 2 << 20
	raw, err := syscall.Mmap(-1, 0, size+huge, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		b.Skip(err)
	}
	defer syscall.Munmap(raw)
	off := (huge - int(uintptr(unsafe.Pointer(&raw[0])))%huge) % huge
	mem := raw[off : off+size]
	_ = syscall.Madvise(mem, 14) // MADV_HUGEPAGE
	table := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), rows*dim)
	r := rand.New(rand.NewPCG(1, 2))
	randFloats(r, table[:dim*1024])
	for i := dim * 1024; i < len(table); i += dim * 1024 {
		copy(table[i:], table[:dim*1024])
	}
	q := slices.Clone(table[:dim])
	pick := make([]int, cands*sets)
	for i := range pick {
		pick[i] = r.IntN(rows)
	}
	row := func(i int) []float32 { return table[i*dim : (i+1)*dim] }
	var sink float32
	type variant struct {
		name string
		f    func(set, next []int)
	}
	var vs []variant
	run := func(name string, f func(set, next []int)) { vs = append(vs, variant{name, f}) }
	sep := func(name string, f func(set, next []int)) {
		b.Run(name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				s := i % sets
				n := (i + 1) % sets
				f(pick[s*cands:(s+1)*cands], pick[n*cands:(n+1)*cands])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cands), "ns/row")
		})
	}
	run("plain", func(set, _ []int) {
		for _, x := range set {
			sink += L2Sq(q, row(x))
		}
	})
	run("all", func(set, _ []int) {
		for _, x := range set {
			Prefetch(row(x))
		}
		for _, x := range set {
			sink += L2Sq(q, row(x))
		}
	})
	for _, lines := range []int{1, 2, 4} {
		run("allfirst"+itoa(lines), func(set, _ []int) {
			for _, x := range set {
				prefetchLines((*byte)(unsafe.Pointer(&table[x*dim])), 64*lines)
			}
			for _, x := range set {
				sink += L2Sq(q, row(x))
			}
		})
	}
	tmp := make([]int, cands)
	run("sorted", func(set, _ []int) {
		copy(tmp, set)
		slices.Sort(tmp)
		for _, x := range tmp {
			Prefetch(row(x))
		}
		for _, x := range tmp {
			sink += L2Sq(q, row(x))
		}
	})
	for _, d := range []int{2, 3, 4, 6, 8, 16} {
		run("ahead"+itoa(d), func(set, _ []int) {
			for _, x := range set[:min(d, len(set))] {
				Prefetch(row(x))
			}
			for i, x := range set {
				if i+d < len(set) {
					Prefetch(row(set[i+d]))
				}
				sink += L2Sq(q, row(x))
			}
		})
	}
	run("nextq", func(set, next []int) {
		for _, x := range next {
			Prefetch(row(x))
		}
		for _, x := range set {
			sink += L2Sq(q, row(x))
		}
	})
	for _, d := range []int{4, 6, 8, 16} {
		run("stream"+itoa(d), func(set, next []int) {
			// set's first d were asked for by the previous call.
			for i, x := range set {
				if j := i + d; j < len(set) {
					Prefetch(row(set[j]))
				} else {
					Prefetch(row(next[j-len(set)]))
				}
				sink += L2Sq(q, row(x))
			}
		})
	}
	// Interleaved: every variant in turn, sets calls each, rounds times, so
	// that the machine's load moves all of them alike; the median round's
	// ns a row for each.
	b.Run("interleaved", func(b *testing.B) {
		const calls = 2000
		per := make([][]float64, len(vs))
		for round := 0; b.Loop(); round++ {
			for vi, v := range vs {
				t0 := nanotime()
				for i := range calls {
					s := (round*calls + i) % sets
					n := (s + 1) % sets
					v.f(pick[s*cands:(s+1)*cands], pick[n*cands:(n+1)*cands])
				}
				per[vi] = append(per[vi], float64(nanotime()-t0)/float64(calls*cands))
			}
		}
		for vi, v := range vs {
			slices.Sort(per[vi])
			b.ReportMetric(per[vi][len(per[vi])/2], v.name+"-ns/row")
		}
	})
	for _, v := range vs {
		sep(v.name, v.f)
	}
	_ = sink
}

func nanotime() int64 { return time.Now().UnixNano() }

func itoa(d int) string {
	if d < 10 {
		return string(rune('0' + d))
	}
	return string(rune('0'+d/10)) + string(rune('0'+d%10))
}
