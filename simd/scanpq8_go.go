package simd

// scanPQ8Go is the portable fast version of ScanPQ8. It walks four
// sub-spaces per step with four independent partial sums, so the float adds
// of one code overlap instead of forming one long dependency chain, and it
// reslices the LUT per sub-space so the byte index needs no bounds check.
//
// Summation order differs from scanPQ8Generic, so results agree to float
// rounding, not bit for bit.
func scanPQ8Go(codes []byte, m int, lut []float32, out []float32) {
	_ = lut[:m*256]
	_ = codes[:len(out)*m]
	for i := range out {
		c := codes[i*m : (i+1)*m]
		var s0, s1, s2, s3 float32
		j := 0
		for ; j+4 <= m; j += 4 {
			t := lut[j*256 : j*256+1024]
			s0 += t[c[j]]
			s1 += t[256+int(c[j+1])]
			s2 += t[512+int(c[j+2])]
			s3 += t[768+int(c[j+3])]
		}
		for ; j < m; j++ {
			s0 += lut[j*256+int(c[j])]
		}
		out[i] = (s0 + s1) + (s2 + s3)
	}
}
