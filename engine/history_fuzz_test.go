package engine

import (
	"math"
	"reflect"
	"testing"

	"github.com/memrl/memrl/fuzz/corpus"
)

// histLogSeeds are real logs: one entry; a full default history of
// integer rewards; float rewards, a time going backwards and a rollback
// of visits; and a log bounded at 3 after many pushes.
func histLogSeeds() map[string]corpus.Seed {
	build := func(max int, es ...histEntry) []byte {
		var b []byte
		for i, e := range es {
			b = histPush(b, uint64(100+i), e, max)
		}
		return b
	}
	var full, many []histEntry
	for i := range DefaultHistoryLen {
		full = append(full, histEntry{ms: 1_800_000_000_000 + int64(i)*1500, reward: float64(i % 2), q: float64(i) / 7, visits: uint64(i + 1)})
	}
	for i := range 20 {
		many = append(many, histEntry{ms: int64(i) * 1e9, reward: -0.5, q: 1 / float64(i+1), visits: uint64(i)})
	}
	return map[string]corpus.Seed{
		"one":  {build(DefaultHistoryLen, histEntry{ms: 1_800_000_000_000, reward: 1, q: 0.3, visits: 1})},
		"full": {build(DefaultHistoryLen, full...)},
		"odd": {build(DefaultHistoryLen,
			histEntry{ms: 5000, reward: 0.1, q: 0.05, visits: 4},
			histEntry{ms: 4000, reward: 3e10, q: 1e10, visits: 5},
			histEntry{ms: 6000, reward: -126, q: -5, visits: 2})},
		"bounded": {build(3, many...)},
	}
}

func TestFuzzSeedsHistLog(t *testing.T) {
	seeds := histLogSeeds()
	for name, s := range seeds {
		if _, _, err := decodeHistLog(s[0].([]byte)); err != nil {
			t.Fatalf("seed %s does not decode: %v", name, err)
		}
	}
	corpus.Check(t, "FuzzDecodeHistLog", seeds)
}

// FuzzDecodeHistLog feeds arbitrary bytes to decodeHistLog, the decoder
// of a checkpoint's history section (after its version byte).
// Invariants: no panic; allocation bounded by MaxHistoryLen entries,
// whatever the count declares; an accepted log holds 1..MaxHistoryLen
// entries, and pushing its entries again (with its LSN) gives a log that
// decodes to the same entries and LSN, trimmed to the newest as asked.
func FuzzDecodeHistLog(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		before := allocatedBytes()
		es, lsn, err := decodeHistLog(data)
		if used := allocatedBytes() - before; used > 128<<10+8*uint64(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d", len(data), used)
		}
		if err != nil {
			return
		}
		if len(es) == 0 || len(es) > MaxHistoryLen {
			t.Fatalf("accepted %d entries", len(es))
		}
		var b []byte
		for i, e := range es {
			l := lsn
			if i < len(es)-1 {
				l = 0 // only the newest's LSN is kept
			}
			b = histPush(b, l, e, MaxHistoryLen)
		}
		again, lsn2, err := decodeHistLog(b)
		if err != nil || lsn2 != lsn || !reflect.DeepEqual(again, es) {
			t.Fatalf("re-pushed log: %v, lsn %d (want %d)\n got %v\nwant %v", err, lsn2, lsn, again, es)
		}
		last, _, err := decodeHistLog(histTrim(data, 1))
		if err != nil || len(last) != 1 || !reflect.DeepEqual(last[0], es[len(es)-1]) {
			t.Fatalf("trimmed to 1: %v %v", last, err)
		}
	})
}

// TestDecodeHistLogRefusesNonFinite: a history entry whose reward or Q is
// NaN or infinite (which no reward can produce) is damage, refused; the
// fuzzer found the NaN accepted.
func TestDecodeHistLogRefusesNonFinite(t *testing.T) {
	for _, e := range []histEntry{
		{ms: 1, reward: math.NaN(), q: 0.5, visits: 1},
		{ms: 1, reward: 0.25, q: math.NaN(), visits: 1},
		{ms: 1, reward: math.Inf(1), q: 0.5, visits: 1},
		{ms: 1, reward: 0.25, q: math.Inf(-1), visits: 1},
	} {
		b := histPush(nil, 7, e, MaxHistoryLen)
		if _, _, err := decodeHistLog(b); err == nil {
			t.Errorf("entry %+v accepted", e)
		}
	}
	b := histPush(nil, 7, histEntry{ms: 1, reward: 0.25, q: 0.5, visits: 1}, MaxHistoryLen)
	if _, _, err := decodeHistLog(b); err != nil {
		t.Fatalf("a finite entry refused: %v", err)
	}
}
