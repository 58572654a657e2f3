package simd

// l2SqGeneric is the reference for L2Sq.
func l2SqGeneric(a, b []float32) float32 {
	var s float32
	b = b[:len(a)]
	for i, x := range a {
		d := x - b[i]
		s += d * d
	}
	return s
}

// dotGeneric is the reference for Dot.
func dotGeneric(a, b []float32) float32 {
	var s float32
	b = b[:len(a)]
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// l2SqBatchGeneric is the reference for L2SqBatch.
func l2SqBatchGeneric(q, rows []float32, out []float32) {
	d := len(q)
	for i := range out {
		out[i] = l2SqGeneric(q, rows[i*d:(i+1)*d])
	}
}

// dotBatchGeneric is the reference for DotBatch.
func dotBatchGeneric(q, rows []float32, out []float32) {
	d := len(q)
	for i := range out {
		out[i] = dotGeneric(q, rows[i*d:(i+1)*d])
	}
}

// pqLUTL2Generic is the reference for PQLUTL2.
func pqLUTL2Generic(q, centroids []float32, m, ksub int, lut []float32) {
	dsub := len(q) / m
	for s := 0; s < m; s++ {
		sub := q[s*dsub : (s+1)*dsub]
		base := centroids[s*ksub*dsub:]
		for c := 0; c < ksub; c++ {
			lut[s*ksub+c] = l2SqGeneric(sub, base[c*dsub:(c+1)*dsub])
		}
	}
}

// pqLUTDotGeneric is the reference for PQLUTDot.
func pqLUTDotGeneric(q, centroids []float32, m, ksub int, lut []float32) {
	dsub := len(q) / m
	for s := 0; s < m; s++ {
		sub := q[s*dsub : (s+1)*dsub]
		base := centroids[s*ksub*dsub:]
		for c := 0; c < ksub; c++ {
			lut[s*ksub+c] = dotGeneric(sub, base[c*dsub:(c+1)*dsub])
		}
	}
}

// scanPQ8Generic is the reference for ScanPQ8.
func scanPQ8Generic(codes []byte, m int, lut []float32, out []float32) {
	for i := range out {
		c := codes[i*m : (i+1)*m]
		var s float32
		for j, b := range c {
			s += lut[j*256+int(b)]
		}
		out[i] = s
	}
}

// fastScan4Generic is the reference for FastScan4.
func fastScan4Generic(codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32) {
	groups := (m + 1) / 2
	nblocks := len(masks)
	for b := 0; b < nblocks; b++ {
		blk := codes[b*groups*FastScanBlock:]
		var mask uint32
		for j := 0; j < FastScanBlock; j++ {
			var s uint16
			for p := 0; p < groups; p++ {
				c := blk[p*FastScanBlock+j]
				s += uint16(lut[(2*p)*16+int(c&15)])
				s += uint16(lut[(2*p+1)*16+int(c>>4)])
			}
			sums[b*FastScanBlock+j] = s
			if s < thresh {
				mask |= 1 << j
			}
		}
		masks[b] = mask
	}
}

// minGeneric is the reference for Min.
func minGeneric(v []float32) float32 {
	m := v[0]
	for _, x := range v[1:] {
		if x < m {
			m = x
		}
	}
	return m
}

// scoreMaskGeneric is the reference for ScoreMask.
func scoreMaskGeneric(sums []uint16, scale, offset float32, terms []float32, bound float32, masks []uint32) {
	terms = terms[:len(sums)]
	fillMasks(len(sums), masks, func(i int) bool {
		// The conversion rounds the product: no fused multiply-add,
		// so every level computes the same float.
		d := float32(float32(sums[i])*scale) + offset
		d += terms[i]
		return d < bound
	})
}

// scoreMask16Generic is the reference for ScoreMask16.
func scoreMask16Generic(sums []uint16, scale, offset float32, terms []uint16, tscale, bound float32, masks []uint32) {
	terms = terms[:len(sums)]
	fillMasks(len(sums), masks, func(i int) bool {
		// Both conversions round their product: no fused multiply-add,
		// so every level computes the same float.
		d := float32(float32(sums[i])*scale) + offset
		d += float32(float32(terms[i]) * tscale)
		return d < bound
	})
}

// fillMasks sets bit j of masks[b] when pass(32·b + j), for the n scores
// in blocks of 32 (the last block's bits past n clear).
func fillMasks(n int, masks []uint32, pass func(i int) bool) {
	for b := 0; b*FastScanBlock < n; b++ {
		var mask uint32
		for j := range min(FastScanBlock, n-b*FastScanBlock) {
			if pass(b*FastScanBlock + j) {
				mask |= 1 << j
			}
		}
		masks[b] = mask
	}
}
