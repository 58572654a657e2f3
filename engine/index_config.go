package engine

import (
	"fmt"
	"math"
	"strings"
)

// IndexKind chooses a collection's phase-1 search.
type IndexKind uint8

const (
	// IndexIVFPQ (the default) searches exactly while the collection is
	// small, then trains an IVF-PQ index in the background once it holds
	// TrainThreshold memories and swaps it in, retraining as it grows.
	IndexIVFPQ IndexKind = iota
	// IndexFlat always searches exactly.
	IndexFlat
)

func (k IndexKind) String() string {
	if k == IndexFlat {
		return "FLAT"
	}
	return "IVFPQ"
}

// ParseIndexKind parses FLAT or IVFPQ (any case).
func ParseIndexKind(s string) (IndexKind, error) {
	switch strings.ToUpper(s) {
	case "FLAT":
		return IndexFlat, nil
	case "IVFPQ":
		return IndexIVFPQ, nil
	}
	return 0, fmt.Errorf("%w: unknown index %q (want FLAT or IVFPQ)", ErrBadParam, s)
}

// DefaultTrainThreshold is the number of memories at which an IVFPQ
// collection trains its index: below it an exact scan is fast enough
// (10k × 768 floats is a few milliseconds) and k-means would have too few
// points per centroid.
const DefaultTrainThreshold = 10000

// TrainSampleBytes bounds the training sample of an IVF-PQ build: the
// build copies at most this many bytes of vectors (256·NLIST of them, fewer
// for large dimensions: 1,024 at DIM 65536, 87,381 at DIM 768) and trains on
// them. Training allocates at most about as much again (see ivfpq.Train),
// and the build then encodes the collection in chunks of at most 64 MiB,
// so a build needs about 2·TrainSampleBytes + 64 MiB besides the index it
// makes, whatever the collection's size and dimension.
const TrainSampleBytes = 256 << 20

// minPointsPerList is the fewest training vectors per coarse list: below it
// k-means has too few points to place a centroid (FAISS warns below 39).
const minPointsPerList = 39

// MaxTrainThreshold bounds TRAIN: the threshold is stored as a uint32 (see
// encodeConfig), and a collection never holds more than 2^32-1 rows, so a
// larger threshold could only be stored truncated.
const MaxTrainThreshold = math.MaxUint32

// IndexConfig configures the IVF-PQ index. Zero fields take defaults chosen
// from the collection's size and dimension when the index is trained (see
// ivfpq.DefaultParams): NList ≈ 2·√n, 4-bit codes of about dim/5 bytes (PQM =
// ivfpq.DefaultM(dim, 4): 52 sub-spaces at dim 128, a 26-byte code), or
// 8-bit codes below 4 dimensions. PQM given without PQBits means
// 8-bit codes (the default before 4-bit codes were); PQBits given without
// PQM takes ivfpq.DefaultM for those bits.
type IndexConfig struct {
	Kind           IndexKind
	NList          int // coarse centroids; 0 means the default
	PQM            int // PQ sub-spaces, at most the dimension (need not divide it); 0 means the default
	PQBits         int // 4 or 8; 0 means the default (see above)
	TrainThreshold int // memories before training; 0 means DefaultTrainThreshold (and at least 40·NList and 256)
}

func (ic IndexConfig) validate(dim int) error {
	if ic.Kind > IndexFlat {
		return fmt.Errorf("%w: unknown index kind %d", ErrBadParam, ic.Kind)
	}
	if ic.NList < 0 || ic.NList > 65536 {
		return fmt.Errorf("%w: NLIST must be 1..65536, got %d", ErrBadParam, ic.NList)
	}
	// Training samples at most TrainSampleBytes of vectors, and needs
	// minPointsPerList of them a list.
	if most := TrainSampleBytes / (4 * dim) / minPointsPerList; ic.NList > most {
		return fmt.Errorf("%w: NLIST must be at most %d at DIM %d (a list needs %d training vectors, and the training sample is at most %d MiB), got %d",
			ErrBadParam, most, dim, minPointsPerList, TrainSampleBytes>>20, ic.NList)
	}
	// PQM need not divide DIM: the sub-spaces then have two widths
	// (ivfpq.Params.M), but each needs at least one dimension.
	if ic.PQM < 0 || ic.PQM > min(dim, 256) {
		return fmt.Errorf("%w: PQM must be at most DIM %d and 256, got %d", ErrBadParam, dim, ic.PQM)
	}
	if ic.PQBits != 0 && ic.PQBits != 4 && ic.PQBits != 8 {
		return fmt.Errorf("%w: PQBITS must be 4 or 8, got %d", ErrBadParam, ic.PQBits)
	}
	if ic.TrainThreshold < 0 || ic.TrainThreshold > MaxTrainThreshold {
		return fmt.Errorf("%w: TRAIN must be 0..%d, got %d", ErrBadParam, uint64(MaxTrainThreshold), ic.TrainThreshold)
	}
	return nil
}

// trainThreshold is the number of live memories that triggers training.
func (ic IndexConfig) trainThreshold() int {
	t := ic.TrainThreshold
	if t == 0 {
		t = DefaultTrainThreshold
	}
	// Training needs at least 256 vectors (the centroids of an 8-bit
	// sub-space) and some 40 per coarse list.
	return max(t, 40*ic.NList, 256)
}
