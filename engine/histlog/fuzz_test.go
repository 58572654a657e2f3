package histlog

import (
	"math"
	"reflect"
	"runtime"
	"testing"

	"github.com/memrl/memrl/fuzz/corpus"
)

// histLogSeeds are real logs: one entry; a full default history of
// integer rewards; float rewards, a time going backwards and a rollback
// of visits; and a log bounded at 3 after many pushes.
func histLogSeeds() map[string]corpus.Seed {
	build := func(max int, es ...Entry) []byte {
		var b []byte
		for i, e := range es {
			b = Push(b, uint64(100+i), e, max)
		}
		return b
	}
	var full, many []Entry
	for i := range defaultLen {
		full = append(full, Entry{MS: 1_800_000_000_000 + int64(i)*1500, Reward: float64(i % 2), Q: float64(i) / 7, Visits: uint64(i + 1)})
	}
	for i := range 20 {
		many = append(many, Entry{MS: int64(i) * 1e9, Reward: -0.5, Q: 1 / float64(i+1), Visits: uint64(i)})
	}
	return map[string]corpus.Seed{
		"one":  {build(defaultLen, Entry{MS: 1_800_000_000_000, Reward: 1, Q: 0.3, Visits: 1})},
		"full": {build(defaultLen, full...)},
		"odd": {build(defaultLen,
			Entry{MS: 5000, Reward: 0.1, Q: 0.05, Visits: 4},
			Entry{MS: 4000, Reward: 3e10, Q: 1e10, Visits: 5},
			Entry{MS: 6000, Reward: -126, Q: -5, Visits: 2})},
		"bounded": {build(3, many...)},
	}
}

func TestFuzzSeedsHistLog(t *testing.T) {
	seeds := histLogSeeds()
	for name, s := range seeds {
		if _, _, err := Decode(s[0].([]byte)); err != nil {
			t.Fatalf("seed %s does not decode: %v", name, err)
		}
	}
	corpus.Check(t, "FuzzDecodeHistLog", seeds)
}

// FuzzDecodeHistLog feeds arbitrary bytes to Decode, the decoder
// of a checkpoint's history section (after its version byte).
// Invariants: no panic; allocation bounded by MaxLen entries,
// whatever the count declares; an accepted log holds 1..MaxLen
// entries, and pushing its entries again (with its LSN) gives a log that
// decodes to the same entries and LSN, trimmed to the newest as asked.
func FuzzDecodeHistLog(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		before := allocatedBytes()
		es, lsn, err := Decode(data)
		if used := allocatedBytes() - before; used > 128<<10+8*uint64(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d", len(data), used)
		}
		if err != nil {
			return
		}
		if len(es) == 0 || len(es) > MaxLen {
			t.Fatalf("accepted %d entries", len(es))
		}
		var b []byte
		for i, e := range es {
			l := lsn
			if i < len(es)-1 {
				l = 0 // only the newest's LSN is kept
			}
			b = Push(b, l, e, MaxLen)
		}
		again, lsn2, err := Decode(b)
		if err != nil || lsn2 != lsn || !reflect.DeepEqual(again, es) {
			t.Fatalf("re-pushed log: %v, lsn %d (want %d)\n got %v\nwant %v", err, lsn2, lsn, again, es)
		}
		last, _, err := Decode(Trim(data, 1))
		if err != nil || len(last) != 1 || !reflect.DeepEqual(last[0], es[len(es)-1]) {
			t.Fatalf("trimmed to 1: %v %v", last, err)
		}
	})
}

// TestDecodeHistLogRefusesNonFinite: a history entry whose reward or Q is
// NaN or infinite (which no reward can produce) is damage, refused; the
// fuzzer found the NaN accepted.
func TestDecodeHistLogRefusesNonFinite(t *testing.T) {
	for _, e := range []Entry{
		{MS: 1, Reward: math.NaN(), Q: 0.5, Visits: 1},
		{MS: 1, Reward: 0.25, Q: math.NaN(), Visits: 1},
		{MS: 1, Reward: math.Inf(1), Q: 0.5, Visits: 1},
		{MS: 1, Reward: 0.25, Q: math.Inf(-1), Visits: 1},
	} {
		b := Push(nil, 7, e, MaxLen)
		if _, _, err := Decode(b); err == nil {
			t.Errorf("entry %+v accepted", e)
		}
	}
	b := Push(nil, 7, Entry{MS: 1, Reward: 0.25, Q: 0.5, Visits: 1}, MaxLen)
	if _, _, err := Decode(b); err != nil {
		t.Fatalf("a finite entry refused: %v", err)
	}
}

// allocatedBytes returns the bytes allocated so far by the process
// (runtime.MemStats.TotalAlloc); the difference of two readings bounds
// what the code between them allocated.
func allocatedBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}
