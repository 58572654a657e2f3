package engine

import (
	"errors"
	"math"
	"testing"
)

// TestHugeComponentsNeverGiveNaNScores is the regression test of a
// FuzzMemArgs finding: finite float32 components near the float32 range
// (3e38) made L2 distances and dot products overflow to infinity, and
// phase 2 then scored the results NaN. Such vectors are refused, for adds
// and queries, with ErrBadVector; components of magnitude up to
// MaxComponent work in every metric at the largest dimension.
func TestHugeComponentsNeverGiveNaNScores(t *testing.T) {
	db, _ := openTemp(t, Options{CheckpointInterval: -1})
	for _, m := range []Metric{L2, IP, Cosine} {
		cfg := NewConfig(4)
		cfg.Metric = m
		c := mustColl(t, db, "c"+m.String(), cfg)
		add(t, c, 1, 0, 1, 0, 0, 0)
		add(t, c, 2, 0, -2, 0.5, 3, 1)
		for _, v := range [][]float32{{3e38, -3e38, 1, 1}, {MaxComponent * 1.01, 0, 0, 0}, {0, 0, 0, -math.MaxFloat32}} {
			if _, err := c.Add(AddRequest{Vector: v}); !errors.Is(err, ErrBadVector) {
				t.Errorf("%v: add of %v: %v, want ErrBadVector", m, v, err)
			}
			if _, err := c.Retrieve(v, NewRetrieveOptions()); !errors.Is(err, ErrBadVector) {
				t.Errorf("%v: query %v: %v, want ErrBadVector", m, v, err)
			}
		}
	}

	// The bound keeps the largest similarities finite in float32.
	cfg := NewConfig(MaxDim)
	big := make([]float32, MaxDim)
	neg := make([]float32, MaxDim)
	for i := range big {
		big[i], neg[i] = MaxComponent, -MaxComponent
	}
	for _, m := range []Metric{L2, IP} {
		cfg.Metric = m
		c := mustColl(t, db, "big"+m.String(), cfg)
		add(t, c, 1, 0, big...)
		add(t, c, 2, 1, neg...)
		res, err := c.Retrieve(neg, NewRetrieveOptions())
		if err != nil || len(res) != 2 {
			t.Fatalf("%v: %v, %v", m, res, err)
		}
		for _, r := range res {
			if !finite(r.Sim) || !finite(r.Score) {
				t.Errorf("%v: result %+v is not finite", m, r)
			}
		}
	}
}
