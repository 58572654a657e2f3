package filter

import (
	"runtime"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// benchAttrs is a typical 150-byte attributes object.
const benchAttrs = `{"task_id":"t-4f2a91c3","user":"u7","session":"s-20261130-0042","step":4,` +
	`"success":true,"tags":["explore","plan","act"],"q_updated_at":1764547200}`

// BenchmarkMatch: go test -run '^$' -bench Match -benchmem ./engine/filter/
func BenchmarkMatch(b *testing.B) {
	e, err := Parse(`.user == "u7" and .step >= 3 and "plan" in .tags`)
	if err != nil {
		b.Fatal(err)
	}
	attrs := []byte(benchAttrs)
	if len(attrs) < 140 || len(attrs) > 160 || !e.Match(attrs) {
		b.Fatalf("benchmark object: %d bytes, match %v", len(attrs), e.Match(attrs))
	}
	b.ReportAllocs()
	for b.Loop() {
		if !e.Match(attrs) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkMatchMiss: the same expression on an object whose first field
// already fails (the common case of a filter on a big collection).
func BenchmarkMatchMiss(b *testing.B) {
	e, err := Parse(`.user == "u8" and .step >= 3 and "plan" in .tags`)
	if err != nil {
		b.Fatal(err)
	}
	attrs := []byte(benchAttrs)
	b.ReportAllocs()
	for b.Loop() {
		if e.Match(attrs) {
			b.Fatal("match")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(`.user == "u7" and .step >= 3 and "plan" in .tags`); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndexRebuild1M measures what opening a collection costs the
// index: building the tenant (1,000 Zipf-sized values) and kind (5 values)
// fields of 1M rows from their attributes (build-ms: AddField per field;
// add-ms: Add per row, both fields at once), and the memory the bitmaps
// hold afterwards (size-MiB: SizeInBytes; heap-MiB: the Go heap's growth):
//
//	go test -run '^$' -bench IndexRebuild1M -benchtime 1x ./engine/filter/
func BenchmarkIndexRebuild1M(b *testing.B) {
	const n = 1_000_000
	attrs := makeTenantAttrs(n)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		ix := NewIndex()
		for _, f := range []string{"tenant", "kind"} {
			if err := ix.AddField(f, func(yield func(uint32, []byte)) {
				for i, a := range attrs {
					yield(uint32(i), a)
				}
			}); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(elapsed.Seconds()*1000, "build-ms")
		b.ReportMetric(float64(ix.SizeInBytes())/(1<<20), "size-MiB")
		// The other way to rebuild: declare the fields, then Add each row
		// once (one pass over the attributes for all fields).
		ix2 := NewIndex()
		for _, f := range []string{"tenant", "kind"} {
			_ = ix2.AddField(f, func(func(uint32, []byte)) {})
		}
		start = time.Now()
		for i, a := range attrs {
			ix2.Add(uint32(i), a)
		}
		ix2.Optimize()
		b.ReportMetric(time.Since(start).Seconds()*1000, "add-ms")
		if ix2.SizeInBytes() != ix.SizeInBytes() {
			b.Fatalf("Add then Optimize: %d bytes, AddField: %d", ix2.SizeInBytes(), ix.SizeInBytes())
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
		tenants := &ix.fields["tenant"].strs
		b.ReportMetric(float64(tenants.len()), "tenants")
		big, small := 0, n
		tenants.each(func(_ string, p *roaring.Bitmap) bool {
			big, small = max(big, int(p.GetCardinality())), min(small, int(p.GetCardinality()))
			return true
		})
		b.ReportMetric(float64(big)/n*100, "largest-%")
		b.ReportMetric(float64(small)/n*100, "smallest-%")
		runtime.KeepAlive(ix)
	}
}

// BenchmarkPlan1M: planning typical filters over 1M rows indexed by tenant
// and kind (as BenchmarkIndexRebuild1M builds them):
//
//	go test -run '^$' -bench Plan1M ./engine/filter/
func BenchmarkPlan1M(b *testing.B) {
	attrs := makeTenantAttrs(1_000_000)
	ix := NewIndex()
	for _, f := range []string{"tenant", "kind"} {
		if err := ix.AddField(f, func(yield func(uint32, []byte)) {
			for i, a := range attrs {
				yield(uint32(i), a)
			}
		}); err != nil {
			b.Fatal(err)
		}
	}
	for _, expr := range []string{
		`.tenant == "t0"`,                     // the largest tenant, ~5.7%
		`.tenant == "t900" and .kind == "k1"`, // a small one
		`.tenant in ["t1", "t2", "t3"] and not (.kind == "k0")`,
		`.tenant == "t5" and .step < 10`, // .step is not indexed: inexact
	} {
		e, err := Parse(expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(expr, func(b *testing.B) {
			var rows uint64
			for b.Loop() {
				r, _, ok := ix.Plan(e)
				if !ok {
					b.Fatal("not ok")
				}
				rows = r.GetCardinality()
			}
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// BenchmarkMatchFloor is a yardstick for BenchmarkMatch on a shared
// machine: one plain pass over the same bytes, counting quotes. Match reads
// each byte about once, so its time is best judged as a multiple of this.
func BenchmarkMatchFloor(b *testing.B) {
	attrs := []byte(benchAttrs)
	for b.Loop() {
		n := 0
		for _, c := range attrs {
			if c == '"' {
				n++
			}
		}
		if n != 26 {
			b.Fatal(n)
		}
	}
}
