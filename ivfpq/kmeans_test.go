package ivfpq

import (
	"math"
	"slices"
	"testing"
)

func sse(x []float32, d int, cent []float32, labels []int32) float64 {
	var s float64
	for i, l := range labels {
		for j := 0; j < d; j++ {
			e := float64(x[i*d+j] - cent[int(l)*d+j])
			s += e * e
		}
	}
	return s
}

func TestKMeansAssignsEveryPointToItsNearestCentroid(t *testing.T) {
	const n, d, k = 3000, 8, 24
	x := clustered(n, d, 12, 7)
	cent, err := kmeans(x, d, kmeansConfig{k: k, niter: 10, workers: 2, seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	labels := make([]int32, n)
	dists := make([]float32, n)
	assignAll(x, d, cent, k, labels, dists, 2)
	for i := 0; i < n; i++ {
		best, bl := math.Inf(1), -1
		for c := 0; c < k; c++ {
			var s float64
			for j := 0; j < d; j++ {
				e := float64(x[i*d+j] - cent[c*d+j])
				s += e * e
			}
			if s < best {
				best, bl = s, c
			}
		}
		if int(labels[i]) != bl && math.Abs(float64(dists[i])-best) > 1e-3*best {
			t.Fatalf("point %d assigned to %d (dist %g), nearest is %d (dist %g)", i, labels[i], dists[i], bl, best)
		}
	}
	// No centroid is left empty, and training beats the random start.
	size := make([]int, k)
	for _, l := range labels {
		size[l]++
	}
	for c, s := range size {
		if s == 0 {
			t.Errorf("centroid %d is empty", c)
		}
	}
	start, _ := kmeans(x, d, kmeansConfig{k: k, niter: 0, workers: 1, seed: 3})
	startLabels := make([]int32, n)
	assignAll(x, d, start, k, startLabels, nil, 1)
	if a, b := sse(x, d, cent, labels), sse(x, d, start, startLabels); a >= b {
		t.Errorf("k-means SSE %g not below the random start's %g", a, b)
	}
}

func TestKMeansSplitsEmptyClusters(t *testing.T) {
	// Two distinct points repeated, 4 centroids: the random start must pick
	// duplicates, whose clusters end up empty unless they are split.
	const d, k = 2, 4
	var x []float32
	for i := 0; i < 400; i++ {
		if i%2 == 0 {
			x = append(x, 1, 2)
		} else {
			x = append(x, 3, 5)
		}
	}
	cent, err := kmeans(x, d, kmeansConfig{k: k, niter: 5, workers: 1, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range cent {
		if math.IsNaN(float64(v)) {
			t.Fatal("NaN centroid")
		}
	}
	// Every empty cluster was re-seeded by splitting a populated one into
	// two perturbed copies: no two centroids are equal.
	for a := 0; a < k; a++ {
		for b := a + 1; b < k; b++ {
			if slices.Equal(cent[a*d:(a+1)*d], cent[b*d:(b+1)*d]) {
				t.Errorf("centroids %d and %d are equal: %v", a, b, cent[a*d:(a+1)*d])
			}
		}
	}
}

func TestKMeansNeedsEnoughPoints(t *testing.T) {
	if _, err := kmeans(make([]float32, 10*4), 4, kmeansConfig{k: 11, niter: 1}); err == nil {
		t.Fatal("k-means with fewer points than centroids succeeded")
	}
}

func TestPQReconstructionErrorFallsAsMGrows(t *testing.T) {
	const n, d = 4000, 32
	x := clustered(n, d, 50, 11)
	prev := math.Inf(1)
	for _, m := range []int{2, 4, 8, 16} {
		p := Params{Dim: d, NList: 1, M: m, Bits: 4}
		book, err := trainPQ(x, nil, nil, nil, p, 2, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		code := make([]byte, m)
		lut := make([]float32, m*16)
		rec := make([]float32, d)
		var e float64
		for i := 0; i < n; i++ {
			v := x[i*d : (i+1)*d]
			encodePQ(p, v, book, code, lut)
			decodePQ(p, code, book, rec)
			for j := range v {
				e += float64((v[j] - rec[j]) * (v[j] - rec[j]))
			}
		}
		e /= n
		t.Logf("M=%d: mean squared reconstruction error %.3f", m, e)
		if e >= prev {
			t.Errorf("M=%d: error %g did not fall below %g", m, e, prev)
		}
		prev = e
	}
}
