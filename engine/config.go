package engine

import (
	"fmt"
	"math"
	"strings"
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
// and the checkpoint:
//
//	dim u32 | metric u8 | alpha f64 | gamma f64 | qinit f64 |
//	index kind u8 | nlist u32 | pqm u32 | pqbits u8 | train u32
//
// REQUIRES: c.Validate() == nil, whose bounds (MaxDim, NLIST 65536, PQM 256,
// PQBITS 8, MaxTrainThreshold) keep every field inside its width: a value
// too wide would be stored truncated, and come back different.
func encodeConfig(b []byte, c Config) []byte {
	b = le.AppendUint32(b, uint32(c.Dim))
	b = append(b, byte(c.Metric))
	b = putF64(b, c.Alpha)
	b = putF64(b, c.Gamma)
	b = putF64(b, c.QInit)
	b = append(b, byte(c.Index.Kind))
	b = le.AppendUint32(b, uint32(c.Index.NList))
	b = le.AppendUint32(b, uint32(c.Index.PQM))
	b = append(b, byte(c.Index.PQBits))
	b = le.AppendUint32(b, uint32(c.Index.TrainThreshold))
	return b
}

func decodeConfig(d *decoder) Config {
	var c Config
	c.Dim = int(d.U32())
	c.Metric = Metric(d.U8())
	c.Alpha = d.F64()
	c.Gamma = d.F64()
	c.QInit = d.F64()
	c.Index.Kind = IndexKind(d.U8())
	c.Index.NList = int(d.U32())
	c.Index.PQM = int(d.U32())
	c.Index.PQBits = int(d.U8())
	c.Index.TrainThreshold = int(d.U32())
	return c
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
