package histlog

import (
	"math"
	"math/rand"
	"reflect"
	"testing"
)

// defaultLen is the engine's default bound of a memory's history
// (engine.DefaultHistoryLen).
const defaultLen = 32

// histRewards are rewards of each encoding: integers (-0 aside), f32, f64.
var histRewards = []float64{1, -1, 0, 0.5, 0.1, 1e-3, 125, -125, 126, -0.25, 3e10, math.Copysign(0, -1)}

// TestHistLogModel pushes random entries into a log with random bounds
// and checks it against a slice; and decodes random damage without panic.
func TestHistLogModel(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := range 200 {
		max := 1 + rng.Intn(40)
		var b []byte
		var model []Entry
		lsn := uint64(rng.Intn(1000))
		ms := int64(rng.Intn(1e12))
		visits := uint64(rng.Intn(10))
		for range rng.Intn(120) {
			lsn += 1 + uint64(rng.Intn(1<<uint(rng.Intn(40))))
			ms += int64(rng.Intn(1<<uint(rng.Intn(40)))) - 1000
			visits += uint64(rng.Intn(3))
			if rng.Intn(20) == 0 {
				visits -= uint64(rng.Intn(int(visits) + 1)) // a rollback
			}
			e := Entry{MS: ms, Reward: histRewards[rng.Intn(len(histRewards))] * float64(rng.Intn(3)), Q: rng.NormFloat64(), Visits: visits}
			if rng.Intn(4) == 0 {
				e.Reward = rng.NormFloat64()
			}
			b = Push(b, lsn, e, max)
			model = append(model, e)
			if len(model) > max {
				model = model[1:]
			}
			got, gotLSN, err := Decode(b)
			if err != nil || gotLSN != lsn || !reflect.DeepEqual(got, model) {
				t.Fatalf("trial %d: %v lsn %d\n got %v\nwant %v", trial, err, gotLSN, got, model)
			}
		}
		if len(model) > 1 {
			small := 1 + rng.Intn(len(model))
			got, _, err := Decode(Trim(append([]byte(nil), b...), small))
			if err != nil || !reflect.DeepEqual(got, model[len(model)-small:]) {
				t.Fatalf("trim to %d: %v %v", small, got, err)
			}
			for range 20 {
				d := append([]byte(nil), b...)
				d[rng.Intn(len(d))] ^= byte(1 + rng.Intn(255))
				Decode(d[:rng.Intn(len(d)+1)]) // must not panic
			}
		}
	}
}

// TestHistoryBytesPerMemory measures a full history's bytes: 32 integer
// rewards a second apart (the common case), and 32 arbitrary rewards.
func TestHistoryBytesPerMemory(t *testing.T) {
	for _, kind := range []string{"integer rewards", "float rewards"} {
		var b []byte
		rng := rand.New(rand.NewSource(1))
		ms, lsn := int64(1_800_000_000_000), uint64(1_000_000)
		for i := range defaultLen {
			r := float64(rng.Intn(2))
			if kind == "float rewards" {
				r = rng.Float64()
			}
			ms += 1000 + int64(rng.Intn(60_000))
			lsn += uint64(rng.Intn(1000))
			b = Push(b, lsn, Entry{MS: ms, Reward: r, Q: rng.Float64(), Visits: uint64(i + 1)}, defaultLen)
		}
		t.Logf("%s: %d entries in %d bytes (%.1f a entry), capacity %d", kind, defaultLen, len(b), float64(len(b))/defaultLen, cap(b))
		if limit := map[string]int{"integer rewards": 14, "float rewards": 22}[kind] * defaultLen; len(b) > limit {
			t.Fatalf("%s: %d bytes, want at most %d", kind, len(b), limit)
		}
	}
}
