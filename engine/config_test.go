package engine

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/memrl/memrl/wal"
)

// TestConfigFieldsFitTheirDiskWidth: every Config field that Validate
// accepts survives encodeConfig/decodeConfig unchanged, and values too wide
// for their on-disk field are refused rather than truncated (issue 14: TRAIN
// 4294967552 was accepted and stored as 256).
func TestConfigFieldsFitTheirDiskWidth(t *testing.T) {
	db, _ := openTemp(t, Options{Sync: wal.SyncNone})
	for _, train := range []int{math.MaxUint32 + 1, 4294967552, math.MaxInt64} {
		cfg := NewConfig(4)
		cfg.Index.TrainThreshold = train
		if err := db.Create("t", cfg); !errors.Is(err, ErrBadParam) {
			t.Fatalf("TRAIN %d: Create = %v, want ErrBadParam", train, err)
		}
	}
	if got := db.List(); len(got) != 0 {
		t.Fatalf("a refused create left collections %v", got)
	}
	for _, cfg := range []Config{
		{Dim: MaxDim, Metric: IP, Alpha: 1, Gamma: 1, QInit: -MaxValue,
			Index: IndexConfig{Kind: IndexIVFPQ, NList: 16, PQM: 256, PQBits: 4, TrainThreshold: MaxTrainThreshold}},
		{Dim: 1, Metric: L2, Index: IndexConfig{Kind: IndexFlat}},
	} {
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		d := decoder{B: encodeConfig(nil, cfg)}
		if got := decodeConfig(&d); !reflect.DeepEqual(got, cfg) || d.Done("config") != nil {
			t.Fatalf("config round trip: %+v, want %+v", got, cfg)
		}
	}
}
