package ann

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// TEXMEX vector files: each vector is a little-endian int32 dimension d
// followed by d components — uint8 in .bvecs, float32 in .fvecs, int32 in
// .ivecs. Every vector of a file has the same dimension.

// readVectors reads a .fvecs or .bvecs file (chosen by extension) as a flat
// float32 slice of n*dim values. limit > 0 reads at most limit vectors.
func readVectors(path string, limit int) (x []float32, n, dim int, err error) {
	var elem int
	switch strings.ToLower(filepath.Ext(path)) {
	case ".fvecs":
		elem = 4
	case ".bvecs":
		elem = 1
	default:
		return nil, 0, 0, fmt.Errorf("%s: unknown vector format (want .fvecs or .bvecs)", path)
	}
	raw, dim, n, err := readRecords(path, elem, limit)
	if err != nil {
		return nil, 0, 0, err
	}
	x = make([]float32, n*dim)
	rec := 4 + dim*elem
	for i := 0; i < n; i++ {
		r := raw[i*rec+4 : (i+1)*rec]
		v := x[i*dim : (i+1)*dim]
		if elem == 1 {
			for j := range v {
				v[j] = float32(r[j])
			}
		} else {
			for j := range v {
				v[j] = math.Float32frombits(binary.LittleEndian.Uint32(r[4*j:]))
			}
		}
	}
	return x, n, dim, nil
}

// readIvecs reads an .ivecs file as n rows of dim int32s.
func readIvecs(path string, limit int) (rows [][]int32, err error) {
	raw, dim, n, err := readRecords(path, 4, limit)
	if err != nil {
		return nil, err
	}
	rows = make([][]int32, n)
	rec := 4 + 4*dim
	for i := range rows {
		r := raw[i*rec+4 : (i+1)*rec]
		row := make([]int32, dim)
		for j := range row {
			row[j] = int32(binary.LittleEndian.Uint32(r[4*j:]))
		}
		rows[i] = row
	}
	return rows, nil
}

// readRecords reads a TEXMEX file and checks that every record has the
// first record's dimension.
func readRecords(path string, elem, limit int) (raw []byte, dim, n int, err error) {
	raw, err = os.ReadFile(path)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(raw) < 4 {
		return nil, 0, 0, fmt.Errorf("%s: too short for a TEXMEX file", path)
	}
	dim = int(int32(binary.LittleEndian.Uint32(raw)))
	if dim <= 0 || dim > 1<<20 {
		return nil, 0, 0, fmt.Errorf("%s: bad dimension %d", path, dim)
	}
	rec := 4 + dim*elem
	if len(raw)%rec != 0 {
		return nil, 0, 0, fmt.Errorf("%s: %d bytes is not a whole number of %d-byte records", path, len(raw), rec)
	}
	n = len(raw) / rec
	if limit > 0 && n > limit {
		n = limit
	}
	for i := 0; i < n; i++ {
		if d := int(int32(binary.LittleEndian.Uint32(raw[i*rec:]))); d != dim {
			return nil, 0, 0, fmt.Errorf("%s: record %d has dimension %d, file starts with %d", path, i, d, dim)
		}
	}
	return raw, dim, n, nil
}

// writeIvecs writes rows as an .ivecs file.
func writeIvecs(path string, rows [][]int32) error {
	var b []byte
	for _, r := range rows {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r)))
		for _, v := range r {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
	}
	return os.WriteFile(path, b, 0o644)
}

// ReadVectors reads a TEXMEX .fvecs or .bvecs file as n*dim float32s (the
// first limit vectors if limit > 0), for other benchmarks on the same files.
func ReadVectors(path string, limit int) (x []float32, n, dim int, err error) {
	return readVectors(path, limit)
}

// ReadIvecs reads a TEXMEX .ivecs file (ground truth) as rows of int32s
// (the first limit rows if limit > 0).
func ReadIvecs(path string, limit int) ([][]int32, error) { return readIvecs(path, limit) }

// WriteIvecs writes rows as a TEXMEX .ivecs file.
func WriteIvecs(path string, rows [][]int32) error { return writeIvecs(path, rows) }
