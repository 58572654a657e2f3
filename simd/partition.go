package simd

import "math"

// PartitionBelow moves the scores whose order key is below lim to the
// front of score, row moving with them, and returns how many there are. A
// score's order key is OrderKey(score), the int32 that sorts as the float
// does; lim may lie beyond the int32 range. With tmpS and tmpR holding at
// least len(score) values (scratch: their contents are not kept), both
// parts keep their input order (a stable partition, the scores below lim
// first), eight scores a step in AVX2; with less, the partition is
// Lomuto's, in place, on every level.
// REQUIRES: len(row) >= len(score).
func PartitionBelow(score []float32, row []uint32, lim int64, tmpS []float32, tmpR []uint32) int {
	if len(tmpS) < len(score) || len(tmpR) < len(score) {
		return partitionLomuto(score, row, lim)
	}
	return cur.Load().partitionBelow(score, row, lim, tmpS, tmpR)
}

// OrderKey maps a float to an int32 that sorts as the float does (with −0
// below +0, and NaNs beyond the infinities by sign): a positive float's
// bits already sort as integers, and a negative one's magnitude bits are
// flipped so that a larger magnitude sorts lower.
func OrderKey(f float32) int32 {
	b := int32(math.Float32bits(f))
	return b ^ int32(uint32(b>>31)>>1)
}

// partitionBelowGeneric is the reference for PartitionBelow's stable
// partition. REQUIRES: len(tmpS), len(tmpR) >= len(score).
func partitionBelowGeneric(score []float32, row []uint32, lim int64, tmpS []float32, tmpR []uint32) int {
	return partitionStableTail(score, row[:len(score)], lim, 0, 0, tmpS, tmpR)
}

// partitionStableTail finishes a stable partition from score[i0:] on,
// the first i0 scores done: j0 of them below lim at the front of score,
// the others at the front of tmpS (tmpR). It moves the others back after
// the scores below and returns how many are below.
func partitionStableTail(score []float32, row []uint32, lim int64, i0, j0 int, tmpS []float32, tmpR []uint32) int {
	j, a := j0, i0-j0
	for i := i0; i < len(score); i++ {
		x, r := score[i], row[i]
		if int64(OrderKey(x)) < lim {
			score[j], row[j] = x, r
			j++
		} else {
			tmpS[a], tmpR[a] = x, r
			a++
		}
	}
	copy(score[j:], tmpS[:a])
	copy(row[j:], tmpR[:a])
	return j
}

// partitionLomuto is PartitionBelow without scratch: in place, Lomuto's
// scheme, the step taken by arithmetic on the sign of key − lim rather
// than by a branch (which side a score falls on is data, and a branch on
// it would be a coin-flip misprediction).
func partitionLomuto(score []float32, row []uint32, lim int64) int {
	row = row[:len(score)]
	j := 0
	for i, x := range score {
		r := row[i]
		score[i], row[i] = score[j], row[j]
		score[j], row[j] = x, r
		j += int(uint64(int64(OrderKey(x))-lim) >> 63)
	}
	return j
}
