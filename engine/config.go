package engine

import (
	"fmt"
	"math"
	"strings"

	"github.com/memrl/memrl/engine/record"
)

// Metric is how a collection measures similarity. Similarity is always
// "higher is more similar".
type Metric uint8

const (
	// Cosine similarity. Vectors are normalised to unit length when they
	// are added (and queries when they are asked), so the similarity is a
	// dot product of stored vectors.
	Cosine Metric = iota
	// L2: similarity is minus the squared Euclidean distance.
	L2
	// IP: similarity is the inner (dot) product.
	IP
)

func (m Metric) String() string {
	switch m {
	case Cosine:
		return "COSINE"
	case L2:
		return "L2"
	case IP:
		return "IP"
	}
	return fmt.Sprintf("Metric(%d)", uint8(m))
}

// ParseMetric parses COSINE, L2 or IP (any case).
func ParseMetric(s string) (Metric, error) {
	switch strings.ToUpper(s) {
	case "COSINE":
		return Cosine, nil
	case "L2":
		return L2, nil
	case "IP":
		return IP, nil
	}
	return 0, fmt.Errorf("%w: unknown metric %q (want COSINE, L2 or IP)", ErrBadParam, s)
}

// Defaults of a collection's learning parameters.
const (
	DefaultAlpha = 0.3
	DefaultGamma = 0.0
	DefaultQInit = 0.0
)

// MaxDim bounds a collection's dimension; it keeps a single vector (and a
// WAL record) at 256 KiB.
const MaxDim = 65536

// MaxComponent bounds the magnitude of each vector component in L2 and IP
// collections (vectors and queries), so that no similarity can overflow
// float32: with |x_i|, |y_i| <= 1e15 and DIM <= MaxDim = 2^16, a squared
// distance is at most 4·2^16·1e30 ≈ 2.6e35 and a dot product at most
// 6.6e34, some thousand times below float32's largest value (3.4e38), which
// leaves room for the index's intermediate terms (distances to centroids,
// residuals, ‖r̂‖² + 2⟨c, r̂⟩; see package ivfpq). A component of 3e38 once
// made every L2 score NaN. COSINE vectors are normalised in float64 before
// they are stored, so any finite component is safe there.
const MaxComponent = 1e15

// MaxPayload bounds a memory's payload. Payloads are opaque bytes: a plan, a
// trajectory, a reflection.
const MaxPayload = 16 << 20

// Config describes a collection. Its zero value is not valid: Dim is
// required. Use NewConfig for the defaults.
type Config struct {
	Dim    int     // vector dimension, 1..MaxDim
	Metric Metric  // similarity; the zero value is Cosine
	Alpha  float64 // learning rate, in [0, 1]
	Gamma  float64 // discount of nextQ in the TD target, in [0, 1]
	QInit  float64 // Q of a memory added without an explicit Q
	Index  IndexConfig
	// Indexed are attribute fields to index from the start (filter_index.go;
	// IndexField changes them later). Not part of encodeConfig's layout:
	// the log carries them in a recIndexed record after the create, and a
	// checkpoint after the config. Collection.Config reports the fields
	// declared at create; IndexedFields the current ones.
	Indexed []string
}

// encodeConfig appends c's fields in the layout shared by the create record
// and the checkpoint (record.Config).
//
// REQUIRES: c.Validate() == nil, whose bounds (MaxDim, NLIST 65536, PQM 256,
// PQBITS 8, MaxTrainThreshold) keep every field inside its width: a value
// too wide would be stored truncated, and come back different.
func encodeConfig(b []byte, c Config) []byte { return record.AppendConfig(b, recConfig(c)) }

func decodeConfig(d *decoder) Config { return configOf(record.DecodeConfig(d)) }

// recConfig is c in record.Config's fields (all but Indexed, which the
// records and checkpoints carry after the config).
func recConfig(c Config) record.Config {
	return record.Config{Dim: uint32(c.Dim), Metric: uint8(c.Metric), Alpha: c.Alpha, Gamma: c.Gamma, QInit: c.QInit,
		IndexKind: uint8(c.Index.Kind), NList: uint32(c.Index.NList), PQM: uint32(c.Index.PQM),
		PQBits: uint8(c.Index.PQBits), TrainThreshold: uint32(c.Index.TrainThreshold)}
}

// configOf is recConfig's inverse; it validates nothing (Validate does).
func configOf(x record.Config) Config {
	return Config{Dim: int(x.Dim), Metric: Metric(x.Metric), Alpha: x.Alpha, Gamma: x.Gamma, QInit: x.QInit,
		Index: IndexConfig{Kind: IndexKind(x.IndexKind), NList: int(x.NList), PQM: int(x.PQM),
			PQBits: int(x.PQBits), TrainThreshold: int(x.TrainThreshold)}}
}

// NewConfig returns a Config of dimension dim with the default metric and
// learning parameters.
func NewConfig(dim int) Config {
	return Config{Dim: dim, Metric: Cosine, Alpha: DefaultAlpha, Gamma: DefaultGamma, QInit: DefaultQInit}
}

// Validate reports whether c is a valid collection configuration.
func (c Config) Validate() error {
	if c.Dim < 1 || c.Dim > MaxDim {
		return fmt.Errorf("%w: DIM must be 1..%d, got %d", ErrBadParam, MaxDim, c.Dim)
	}
	if c.Metric > IP {
		return fmt.Errorf("%w: unknown metric %d", ErrBadParam, c.Metric)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"ALPHA", c.Alpha}, {"GAMMA", c.Gamma}} {
		if math.IsNaN(p.v) || p.v < 0 || p.v > 1 {
			return fmt.Errorf("%w: %s must be in [0, 1], got %v", ErrBadParam, p.name, p.v)
		}
	}
	if err := boundedValue(c.QInit, "QINIT"); err != nil {
		return err
	}
	if _, err := checkIndexed(c.Indexed); err != nil {
		return err
	}
	return c.Index.validate(c.Dim)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// MaxValue bounds the magnitude of rewards, NEXTQ, initial Q values and
// QINIT. With α and γ in [0, 1] a TD update is a convex mix of Q and
// r + γ·nextQ, so |Q| never exceeds 2·MaxValue: no update can overflow, and
// a reward naming several memories never fails part-way.
const MaxValue = 1e15

// boundedValue enforces ErrBadNumber for learning values.
func boundedValue(f float64, what string) error {
	if !finite(f) || math.Abs(f) > MaxValue {
		return fmt.Errorf("%w: %s must be a finite number of magnitude at most %g, got %v", ErrBadNumber, what, MaxValue, f)
	}
	return nil
}

// validName enforces ErrBadName. Names become part of nothing on disk (a
// collection's folder is named by its uid), but they travel in the line
// protocol, so they are kept to printable characters without spaces.
// Braces are allowed for Redis Cluster hash tags: "{agent7}.plans" and
// "{agent7}.notes" hash to one slot (cluster.HashTag), so that one
// shard holds both and a transaction may use both.
func validName(s string) error {
	if len(s) == 0 || len(s) > 128 {
		return ErrBadName
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '.' || c == ':' || c == '-' || c == '{' || c == '}'
		if !ok {
			return ErrBadName
		}
	}
	return nil
}
