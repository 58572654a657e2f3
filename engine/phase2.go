package engine

import (
	"math"
	"sort"
)

// zClip bounds the z-score of Q, so that one memory with an extreme learned
// utility cannot drown the similarity signal of the whole pool.
const zClip = 3.0

// RawQClip bounds Q in a raw-Q ranking (RetrieveOptions.RawQ): the score is
// (1-λ)·z(sim) + λ·clip(Q, ±RawQClip). It is zClip, so that at λ = 1/2 a raw
// Q can outweigh similarity no more than a z-scored Q can. Q learned from
// rewards in [0, 1] lies in [0, 1] and is never clipped.
const RawQClip = zClip

// scored is a phase-2 candidate.
type scored struct {
	id    uint64
	row   uint32
	sim   float64
	q     float64
	score float64
}

// rankPhase2 scores the pool by (1-λ)·z(sim) + λ·clip(z(Q), ±3), where z is
// the z-score over the pool (population standard deviation; a pool whose
// standard deviation is 0 gives z = 0), sorts best first (ties: higher
// similarity, then lower id) and keeps the first k2.
//
// Scores are always finite: similarities are z-scored as rankSim clamps
// them, and Q is bounded (MaxValue).
func rankPhase2(pool []scored, lambda float64, k2 int) []scored {
	return rankPhase2Opts(pool, lambda, k2, false)
}

// rankPhase2Opts is rankPhase2, or with rawQ the ablation that ranks by
// (1-λ)·z(sim) + λ·clip(Q, ±RawQClip): Q as learned, not z-scored over the
// pool. Raw Q is what the MemRL paper compares z-normalisation against; it
// exists so that the comparison can run through the server (bench/loop).
func rankPhase2Opts(pool []scored, lambda float64, k2 int, rawQ bool) []scored {
	ms, ss := meanStd(pool, func(s scored) float64 { return rankSim(s.sim) })
	mq, sq := meanStd(pool, func(s scored) float64 { return s.q })
	for i := range pool {
		zs := zscore(rankSim(pool[i].sim), ms, ss)
		var zq float64
		if rawQ {
			zq = math.Max(-RawQClip, math.Min(RawQClip, pool[i].q))
		} else {
			zq = math.Max(-zClip, math.Min(zClip, zscore(pool[i].q, mq, sq)))
		}
		pool[i].score = (1-lambda)*zs + lambda*zq
	}
	sort.SliceStable(pool, func(i, j int) bool {
		a, b := pool[i], pool[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if as, bs := rankSim(a.sim), rankSim(b.sim); as != bs {
			return as > bs // never NaN: a consistent order
		}
		return a.id < b.id
	})
	if k2 < len(pool) {
		pool = pool[:k2]
	}
	return pool
}

// rankSim is the similarity phase 2 ranks by: sim clamped to float32's
// finite range, NaN as the least similar. Checked vectors (MaxComponent)
// never give a non-finite similarity, but vectors stored before that check
// existed can, and one infinity would make the pool's mean and standard
// deviation, and so every score, NaN. In float64, sums of squares of
// clamped values cannot overflow.
func rankSim(sim float64) float64 {
	const big = math.MaxFloat32
	switch {
	case math.IsNaN(sim):
		return -big
	case sim > big:
		return big
	case sim < -big:
		return -big
	}
	return sim
}

func meanStd(pool []scored, f func(scored) float64) (mean, std float64) {
	if len(pool) == 0 {
		return 0, 0
	}
	for _, s := range pool {
		mean += f(s)
	}
	mean /= float64(len(pool))
	var v float64
	for _, s := range pool {
		d := f(s) - mean
		v += d * d
	}
	return mean, math.Sqrt(v / float64(len(pool)))
}

// zscore returns (x-mean)/std, or 0 when std is 0 (or too small to divide
// by without the rounding noise of identical values turning into ±big).
func zscore(x, mean, std float64) float64 {
	if std <= 1e-12*math.Max(1, math.Abs(mean)) {
		return 0
	}
	return (x - mean) / std
}
