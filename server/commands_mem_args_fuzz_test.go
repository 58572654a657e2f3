package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/fuzz/corpus"
	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// memArgsSeeds are the argument lists of real MEM.ADD, MEM.RETRIEVE and
// MEM.MRETRIEVE commands (after the collection name), joined by '\n' as FuzzMemArgs
// splits them. TestFuzzSeedsMemArgs keeps the committed corpus current.
func memArgsSeeds() map[string]corpus.Seed {
	join := func(args ...string) corpus.Seed { return corpus.Seed{[]byte(joinArgs(args...))} }
	return map[string]corpus.Seed{
		"fp32":            join("FP32", fp32(1, 2, 3, 4)),
		"fp32-options":    join("FP32", fp32(0.5, -1, 0, 2), "K1", "20", "K2", "3", "LAMBDA", "0.25", "WITHPAYLOAD"),
		"fp32-nan":        join("FP32", fp32(1, float32(math.NaN()), 0, 0)),
		"fp32-inf":        join("FP32", fp32(1, float32(math.Inf(-1)), 0, 0)),
		"fp32-huge":       join("FP32", fp32(3e38, -3e38, 1, 1)),
		"fp32-short":      join("FP32", "abc"),
		"fp32-wrong-dim":  join("FP32", fp32(1, 2, 3)),
		"values":          join("VALUES", "4", "1", "2.5", "-3e-2", "4"),
		"values-options":  join("VALUES", "4", "1", "0", "0", "0", "DELTA", "-1.5", "NPROBE", "2", "REFINE", "4"),
		"values-nan":      join("VALUES", "4", "nan", "1", "1", "1"),
		"values-inf":      join("VALUES", "4", "1", "+Inf", "1", "1"),
		"values-range":    join("VALUES", "4", "1e39", "1", "1", "1"),
		"values-short":    join("VALUES", "5", "1", "2"),
		"values-negative": join("VALUES", "-1"),
		"values-hex":      join("VALUES", "4", "0x1p-2", "1_0", "1", "1"),
		"add-options":     join("VALUES", "4", "1", "1", "1", "1", "ID", "18446744073709551615", "Q", "1e15", "PAYLOAD", "x"),
		"bad-options":     join("FP32", fp32(1, 1, 1, 1), "K1", "1e3", "LAMBDA", "NaN", "K2", "-5"),
		"keyword-case":    join("values", "4", "1", "1", "1", "1", "lambda", "1"),
		"add-ext":         join("VALUES", "4", "1", "1", "1", "1", "ATTRS", `{"user":"u7","tags":["a",1]}`, "KEY", "task-1", "TTL", "60"),
		"add-ext-bad":     join("VALUES", "4", "1", "1", "1", "1", "ATTRS", `{"a":[`, "KEY", "", "TTL", "-1"),
		"retrieve-ext":    join("VALUES", "4", "1", "0", "0", "0", "WITHATTRS", "WITHKEYS"),
		// MEM.MRETRIEVE: options, then QUERIES n and n vectors.
		"mretrieve":          join("QUERIES", "2", "FP32", fp32(1, 0, 0, 0), "VALUES", "4", "0", "1", "0", "0"),
		"mretrieve-options":  join("K1", "3", "K2", "2", "LAMBDA", "0.75", "WITHATTRS", "WITHKEYS", "QUERIES", "1", "FP32", fp32(1, 1, 1, 1)),
		"mretrieve-bad-dim":  join("QUERIES", "2", "FP32", fp32(1, 0, 0, 0), "FP32", fp32(1, 0, 0)),
		"mretrieve-nan":      join("K2", "1", "QUERIES", "2", "VALUES", "4", "1", "1", "1", "1", "VALUES", "4", "nan", "0", "0", "0"),
		"mretrieve-short":    join("QUERIES", "3", "FP32", fp32(1, 0, 0, 0)),
		"mretrieve-trailing": join("QUERIES", "1", "FP32", fp32(1, 0, 0, 0), "K2", "1"),
		"mretrieve-count":    join("QUERIES", "1025", "FP32", fp32(1, 0, 0, 0)),
	}
}

func joinArgs(args ...string) string {
	var b bytes.Buffer
	for i, a := range args {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(a)
	}
	return b.String()
}

func TestFuzzSeedsMemArgs(t *testing.T) {
	corpus.Check(t, "FuzzMemArgs", memArgsSeeds())
}

// fuzzDB is the database FuzzMemArgs adds to, replaced every
// fuzzDBAdds adds so that its in-memory log stays small.
var (
	fuzzDB   *engine.DB
	fuzzAdds int
)

const fuzzDBAdds = 2000

// fuzzColls returns the fuzz database's collections of dimension 4: L2,
// COSINE and IP, each holding a few memories.
func fuzzColls(t *testing.T) []*engine.Collection {
	if fuzzDB != nil && fuzzAdds >= fuzzDBAdds {
		fuzzDB.Close()
		fuzzDB = nil
	}
	if fuzzDB == nil {
		db, err := engine.Open("/db", engine.Options{FS: vfs.NewMemFS(), Sync: wal.SyncNone,
			CheckpointInterval: -1, Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []engine.Metric{engine.L2, engine.Cosine, engine.IP} {
			cfg := engine.NewConfig(4)
			cfg.Metric = m
			name := m.String()
			if err := db.Create(name, cfg); err != nil {
				t.Fatal(err)
			}
			c, _ := db.Collection(name)
			for _, v := range [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}, {1, 1, 1, 1}, {-2, 0.5, 3, 1}} {
				if _, err := c.Add(engine.AddRequest{Vector: v}); err != nil {
					t.Fatal(err)
				}
			}
		}
		fuzzDB, fuzzAdds = db, 0
	}
	var out []*engine.Collection
	for _, n := range fuzzDB.List() {
		c, err := fuzzDB.Collection(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// acceptable reports whether the engine may accept v in collection c:
// finite components, of magnitude at most engine.MaxComponent in L2 and
// IP collections (COSINE vectors are normalised, so any finite one is
// safe there, but not all zero).
func acceptable(c *engine.Collection, v []float32) bool {
	cosine := c.Config().Metric == engine.Cosine
	var norm float64
	for _, x := range v {
		f := math.Abs(float64(x))
		if math.IsNaN(f) || math.IsInf(f, 0) || (!cosine && f > engine.MaxComponent) {
			return false
		}
		norm += f * f
	}
	// A COSINE collection refuses an all-zero vector: it has no direction.
	return !cosine || norm > 0
}

// FuzzMemArgs parses arbitrary argument lists ('\n'-separated) the way
// MEM.ADD and MEM.RETRIEVE do after the collection name: a vector
// (argList.vector) and then options through the numeric option parsers.
// It hands what parses to the engine, as the commands do. Invariants:
//
//   - no parser panics;
//   - vector() consumes exactly its arguments and returns what they
//     encode: len(blob)/4 components for FP32 (bit for bit), d components
//     for VALUES d, each the float32 strconv parses;
//   - float() accepts only finite numbers; int() and uint64() return what
//     strconv returns for the argument;
//   - a vector the engine accepts, for an add or a retrieval, has the
//     collection's dimension and only finite components (of magnitude at
//     most engine.MaxComponent in L2 and IP collections), and is stored
//     as such; a retrieval the engine accepts returns at most K2 results
//     whose similarity, Q and score are numbers (not NaN);
//   - an add the engine accepts with ATTRS stores them as one compact
//     JSON object, with KEY stores that key (and Get by it finds the
//     memory), with TTL stores an expiry;
//   - arguments MEM.MRETRIEVE's parser accepts (parseMRetrieve) hold 1 to
//     MaxMRetrieveQueries queries, and a batch the engine accepts returns,
//     for each query, what a retrieval of that query alone returns
//     (checkMRetrieve).
func FuzzMemArgs(f *testing.F) {
	f.Add([]byte("VALUES\n4\n1\n2\n3\n4"))
	f.Fuzz(func(t *testing.T, data []byte) {
		args := bytes.Split(data, []byte("\n"))
		if r, err := parseMRetrieve(args); err == nil {
			checkMRetrieve(t, r)
			return
		}
		a := argList{args: args}
		v, err := a.vector()
		if err != nil {
			return
		}
		switch kw := string(bytes.ToUpper(args[0])); kw {
		case "FP32":
			blob := args[1]
			if a.i != 2 || len(v) != len(blob)/4 || len(blob)%4 != 0 || len(v) == 0 {
				t.Fatalf("FP32 blob of %d bytes: %d components, %d args consumed", len(blob), len(v), a.i)
			}
			for i, x := range v {
				if math.Float32bits(x) != binary.LittleEndian.Uint32(blob[4*i:]) {
					t.Fatalf("FP32 component %d = %v, not the blob's bits", i, x)
				}
			}
		case "VALUES":
			d, _ := strconv.Atoi(string(args[1]))
			if len(v) != d || a.i != 2+d {
				t.Fatalf("VALUES %d: %d components, %d args consumed", d, len(v), a.i)
			}
			for i, x := range v {
				f, err := strconv.ParseFloat(string(args[2+i]), 32)
				if err != nil || math.Float32bits(float32(f)) != math.Float32bits(x) {
					t.Fatalf("VALUES component %d = %v from %q", i, x, args[2+i])
				}
			}
		default:
			t.Fatalf("vector accepted keyword %q", kw)
		}

		opt := engine.NewRetrieveOptions()
		var req engine.AddRequest
		req.Vector = v
		for a.more() {
			arg := a.args[a.i]
			var err error
			switch a.keyword() {
			case "K1", "K2", "NPROBE", "REFINE":
				var n int
				n, err = a.int("N")
				if err == nil {
					want, _ := strconv.Atoi(string(a.args[a.i-1]))
					if n != want {
						t.Fatalf("int(%q) = %d", a.args[a.i-1], n)
					}
					switch string(bytes.ToUpper(arg)) {
					case "K1":
						opt.K1 = n
					case "K2":
						opt.K2 = n
					case "NPROBE":
						opt.NProbe = n
					case "REFINE":
						opt.Refine = n
					}
				}
			case "LAMBDA", "DELTA", "Q":
				var x float64
				x, err = a.float("X")
				if err == nil {
					if math.IsNaN(x) || math.IsInf(x, 0) {
						t.Fatalf("float(%q) accepted %v", a.args[a.i-1], x)
					}
					switch string(bytes.ToUpper(arg)) {
					case "LAMBDA":
						opt.Lambda = x
					case "DELTA":
						opt.Delta, opt.HasDelta = x, true
					case "Q":
						req.Q, req.HasQ = x, true
					}
				}
			case "ID":
				var id uint64
				id, err = a.uint64("ID")
				if err == nil {
					if want, perr := strconv.ParseUint(string(a.args[a.i-1]), 10, 64); perr != nil || id != want {
						t.Fatalf("uint64(%q) = %d", a.args[a.i-1], id)
					}
					req.ID, req.HasID = id, true
				}
			case "WITHPAYLOAD":
				opt.WithPayload = true
			case "WITHATTRS":
				opt.WithAttrs = true
			case "ATTRS", "KEY", "TTL":
				_, err = a.parseAddExt(strings.ToUpper(string(arg)), &req)
			}
			if err != nil {
				break
			}
		}

		for _, c := range fuzzColls(t) {
			res, err := c.Retrieve(v, opt)
			if err == nil {
				if len(v) != 4 || !acceptable(c, v) {
					t.Fatalf("%s: retrieval with query %v accepted", c.Name(), v)
				}
				if len(res) > opt.K2 {
					t.Fatalf("%s: %d results for K2 %d", c.Name(), len(res), opt.K2)
				}
				for _, r := range res {
					if math.IsNaN(r.Sim) || math.IsNaN(r.Q) || math.IsNaN(r.Score) {
						t.Fatalf("%s: query %v %+v: result %+v", c.Name(), v, opt, r)
					}
				}
			}
			id, err := c.Add(req)
			fuzzAdds++
			if err != nil {
				continue
			}
			if len(v) != 4 || !acceptable(c, v) {
				t.Fatalf("%s: add of %v accepted", c.Name(), v)
			}
			m, err := c.Get(id)
			if err != nil {
				t.Fatalf("%s: get of added %d: %v", c.Name(), id, err)
			}
			if len(m.Vector) != 4 || !acceptable(c, m.Vector) {
				t.Fatalf("%s: stored vector %v for %v", c.Name(), m.Vector, v)
			}
			if len(req.Attrs) > 0 {
				var compact bytes.Buffer
				if json.Compact(&compact, req.Attrs) != nil || !bytes.Equal(compact.Bytes(), m.Attrs) || m.Attrs[0] != '{' {
					t.Fatalf("%s: attributes %q stored as %q", c.Name(), req.Attrs, m.Attrs)
				}
			}
			if m.Key != req.Key || (req.TTL > 0) == m.Expires.IsZero() {
				t.Fatalf("%s: key %q TTL %v stored as %q %v", c.Name(), req.Key, req.TTL, m.Key, m.Expires)
			}
			if req.Key != "" {
				if byKey, err := c.GetRef(engine.ByKey(req.Key)); err != nil || byKey.ID != id {
					t.Fatalf("%s: key %q finds %+v, %v", c.Name(), req.Key, byKey, err)
				}
			}
			if _, err := c.Delete([]uint64{id}); err != nil && !errors.Is(err, engine.ErrNoMemory) {
				t.Fatalf("%s: delete %d: %v", c.Name(), id, err)
			}
		}
	})
}

// checkMRetrieve checks FuzzMemArgs's invariants of a parsed MEM.MRETRIEVE
// on each fuzz collection: the batch (retrieveBatch, as the command runs
// it) fails only if a query is not acceptable, and otherwise returns for
// each query what Retrieve returns for it alone.
func checkMRetrieve(t *testing.T, r mretrieveArgs) {
	if n := len(r.queries); n < 1 || n > MaxMRetrieveQueries {
		t.Fatalf("MEM.MRETRIEVE parsed with %d queries", n)
	}
	opt := r.engineOptions()
	if opt.Validate() != nil {
		return
	}
	for _, c := range fuzzColls(t) {
		ok := true
		for _, q := range r.queries {
			ok = ok && len(q) == 4 && acceptable(c, q)
		}
		got, err := retrieveBatch(context.Background(), c, r.queries, opt)
		if err != nil {
			if ok {
				t.Fatalf("%s: batch of acceptable queries %v refused: %v", c.Name(), r.queries, err)
			}
			continue
		}
		if !ok {
			t.Fatalf("%s: batch %v with an unacceptable query accepted", c.Name(), r.queries)
		}
		for i, q := range r.queries {
			want, err := c.Retrieve(q, opt)
			if err != nil || !reflect.DeepEqual(got[i], want) {
				t.Fatalf("%s: query %d of the batch: %+v, alone %+v (%v)", c.Name(), i, got[i], want, err)
			}
		}
	}
}
