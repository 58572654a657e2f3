package simd

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// Level names, in increasing order of capability.
const (
	LevelGeneric = "generic" // portable Go
	LevelAVX2    = "avx2"    // AVX2 + FMA3, 256-bit
	LevelAVX512  = "avx512"  // AVX-512 F/BW/DQ/VL, 512-bit
)

// EnvVar names the environment variable that forces a kernel level at start.
const EnvVar = "MEMRL_SIMD"

// Sentinel errors returned by SetLevel (and recorded by EnvError).
var (
	// ErrUnknownLevel: the name is not one of generic, avx2, avx512.
	ErrUnknownLevel = errors.New("simd: unknown kernel level")
	// ErrUnsupportedLevel: the CPU (or OS) lacks the features the level needs.
	ErrUnsupportedLevel = errors.New("simd: kernel level not supported by this CPU")
)

// kernels is one complete set of implementations. Sets are immutable once
// built; switching levels swaps the pointer, so a call in flight finishes
// with the set it loaded and concurrent SetLevel calls are race-free.
type kernels struct {
	level      string
	l2Sq       func(a, b []float32) float32
	dot        func(a, b []float32) float32
	l2SqBatch  func(q, rows, out []float32)
	dotBatch   func(q, rows, out []float32)
	scanPQ8    func(codes []byte, m int, lut, out []float32)
	fastScan4  func(codes []byte, m int, lut []byte, thresh uint16, sums []uint16, masks []uint32)
	dotBlocked func(q, blocks, out []float32)
	// dotBlockedF16 is dotBlocked over half-precision blocks.
	dotBlockedF16 func(q []float32, blocks []uint16, out []float32)
	min           func(v []float32) float32
	scoreMask     func(sums []uint16, scale, offset float32, terms []float32, bound float32, masks []uint32)
	// scoreMask16 is scoreMask with 16-bit fixed-point terms.
	scoreMask16 func(sums []uint16, scale, offset float32, terms []uint16, tscale, bound float32, masks []uint32)

	// dotBlockedF16Multi is dotBlockedF16 for several queries.
	dotBlockedF16Multi func(qs []float32, dim int, blocks []uint16, rows int, out []float32)

	// fastScan4Multi is fastScan4 for up to four queries.
	fastScan4Multi func(codes []byte, m int, q *FastScan4Queries)

	// The coarse step's kernels and the table's quantization (select.go).
	coarseDist   func(dst, norm, dot []float32, qq, unscale float32)
	minBits      func(reps []int32, v []float32)
	maskLE       func(v []float32, b float32, masks []uint32)
	quantizeLUT4 func(lut []float32, m int, q []byte) (scale, offset float32)

	// partitionBelow is a quickselect's partition step (partition.go).
	partitionBelow func(score []float32, row []uint32, lim int64, tmpS []float32, tmpR []uint32) int
}

var genericKernels = &kernels{
	level:      LevelGeneric,
	l2Sq:       l2SqGeneric,
	dot:        dotGeneric,
	l2SqBatch:  l2SqBatchGeneric,
	dotBatch:   dotBatchGeneric,
	scanPQ8:    scanPQ8Go,
	fastScan4:  fastScan4Generic,
	dotBlocked: dotBlockedGeneric,
	min:        minGeneric,
	scoreMask:  scoreMaskGeneric,

	dotBlockedF16: dotBlockedF16Generic,

	scoreMask16: scoreMask16Generic,

	dotBlockedF16Multi: dotBlockedF16MultiGeneric,

	fastScan4Multi: fastScan4MultiGeneric,

	coarseDist:   coarseDistGeneric,
	minBits:      minBitsGeneric,
	maskLE:       maskLEGeneric,
	quantizeLUT4: quantizeLUT4Generic,

	partitionBelow: partitionBelowGeneric,
}

// cur is the kernel set in use. INVARIANT: never nil after package init.
var cur atomic.Pointer[kernels]

// envErr records why MEMRL_SIMD was not honoured at start (nil if it was, or
// if it was unset).
var envErr error

func init() {
	k, err := chooseAtStart(os.Getenv(EnvVar))
	cur.Store(k)
	if err != nil {
		envErr = err
		// A library should not normally write to stderr, but a silently
		// ignored override would make benchmarks lie; say it once, loudly.
		fmt.Fprintf(os.Stderr, "memrl: %s=%q ignored: %v; using %s kernels\n",
			EnvVar, os.Getenv(EnvVar), err, k.level)
	}
}

// chooseAtStart returns the kernel set to use given the value of MEMRL_SIMD.
// An empty value selects the best set for the CPU. A value naming an unknown
// or unsupported level also selects the best set, and returns the reason.
func chooseAtStart(env string) (*kernels, error) {
	best := kernelsFor(bestLevel())
	if env == "" {
		return best, nil
	}
	k, err := lookup(env)
	if err != nil {
		return best, err
	}
	return k, nil
}

// lookup returns the kernel set for a level name, or why it cannot be used.
func lookup(name string) (*kernels, error) {
	switch name {
	case LevelGeneric, LevelAVX2, LevelAVX512:
	default:
		return nil, fmt.Errorf("%w: %q (want %s, %s or %s)", ErrUnknownLevel, name,
			LevelGeneric, LevelAVX2, LevelAVX512)
	}
	for _, l := range Levels() {
		if l == name {
			return kernelsFor(name), nil
		}
	}
	return nil, fmt.Errorf("%w: %s (this CPU supports %v)", ErrUnsupportedLevel, name, Levels())
}

// Level names the kernels in use: "generic", "avx2" or "avx512".
func Level() string { return cur.Load().level }

// SetLevel switches every kernel to the named level. It fails, changing
// nothing, with ErrUnknownLevel or ErrUnsupportedLevel. It is safe to call
// concurrently with the kernels (meant for tests and benchmarks).
func SetLevel(name string) error {
	k, err := lookup(name)
	if err != nil {
		return err
	}
	cur.Store(k)
	return nil
}

// Levels lists the levels this CPU supports, from least to most capable.
// "generic" is always first.
func Levels() []string { return supportedLevels() }

// EnvError reports why the MEMRL_SIMD override was ignored at start, or nil.
// When it is non-nil the package fell back to the CPU's best level (and
// printed a warning to stderr).
func EnvError() error { return envErr }
