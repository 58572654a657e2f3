package filter

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

func TestBucketKeyOrder(t *testing.T) {
	vals := []float64{math.Inf(-1), -math.MaxFloat64, -1e300, -1700000000, -2, -1, -0.5,
		-math.SmallestNonzeroFloat64, 0, math.SmallestNonzeroFloat64, 0.5, 1, 2, 3, 131071, 131072,
		1700000000, 1e300, math.MaxFloat64, math.Inf(1)}
	for i := 1; i < len(vals); i++ {
		if bucketKey(vals[i-1]) > bucketKey(vals[i]) {
			t.Errorf("bucketKey(%g) > bucketKey(%g)", vals[i-1], vals[i])
		}
	}
	if bucketKey(math.Copysign(0, -1)) != bucketKey(0) {
		t.Error("-0 and +0 in different buckets")
	}
	// Integers below 2^17 get a bucket each; timestamps share 2^14 s buckets.
	for v := 0.0; v < 1<<17; v++ {
		if bucketKey(v) == bucketKey(v+1) && v+1 < 1<<17 {
			t.Fatalf("%g and %g share a bucket", v, v+1)
		}
	}
	if bucketKey(1700000000) != bucketKey(1700000000+3600) {
		t.Error("timestamps an hour apart in different buckets")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		a, b := r.NormFloat64()*1e6, r.NormFloat64()*1e6
		if a < b && bucketKey(a) > bucketKey(b) {
			t.Fatalf("bucketKey(%g) > bucketKey(%g)", a, b)
		}
	}
}

func planRows(t *testing.T, ix *Index, expr string) ([]uint32, bool, bool) {
	t.Helper()
	e, err := Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	rows, exact, ok := ix.Plan(e)
	if !ok {
		return nil, false, false
	}
	return rows.ToArray(), exact, true
}

func TestIndexPlan(t *testing.T) {
	attrs := []string{
		0: `{"user":"u1","step":1,"tags":["plan","act"],"ts":1700000000}`,
		1: `{"user":"u7","step":3,"tags":["plan"],"ts":1700003600}`,
		2: `{"user":"u7","step":5,"tags":"planning","ts":1700100000}`,
		3: `{"user":"u8","step":true,"tags":[],"ts":1800000000}`,
		4: `{"user":7,"other":1}`,
		5: `{}`,
	}
	ix := NewIndex()
	for _, f := range []string{"user", "step", "tags", "ts"} {
		err := ix.AddField(f, func(yield func(uint32, []byte)) {
			for i, a := range attrs {
				yield(uint32(i), []byte(a))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := ix.Fields(); !slices.Equal(got, []string{"step", "tags", "ts", "user"}) {
		t.Errorf("Fields() = %v", got)
	}
	tests := []struct {
		expr  string
		rows  []uint32
		exact bool
	}{
		{`.user == "u7"`, []uint32{1, 2}, true},
		{`.user == 7`, []uint32{4}, true},
		{`.user != "u7"`, []uint32{0, 3}, true}, // row 4's user is a number: no match
		{`.user in ["u1", "u8", 7]`, []uint32{0, 3, 4}, true},
		{`.step >= 3`, []uint32{1, 2}, true},
		{`.step == true`, []uint32{0, 3}, true}, // true is 1
		{`.step`, []uint32{0, 1, 2, 3}, true},
		{`"plan" in .tags`, []uint32{0, 1, 2}, true}, // element, or substring of "planning"
		{`"act" in .tags`, []uint32{0}, true},
		{`.user == "u7" and .step >= 3 and "plan" in .tags`, []uint32{1, 2}, true},
		{`.user == "u7" or .step == 1`, []uint32{0, 1, 2, 3}, true}, // row 3: true is 1
		{`not (.user == "u7")`, []uint32{0, 3}, true},
		{`.ts > 1700000000 and .ts < 1700050000`, []uint32{1}, false}, // 1700000000 and 1700003600 share a bucket
		{`.ts >= 1800000000`, []uint32{3}, true},
		{`.user == "u7" and .missing == 1`, []uint32{1, 2}, false}, // .missing is not indexed
		{`.user == "u7" and .step * 2 > 6`, []uint32{2, 1}, false},
	}
	for _, tt := range tests {
		rows, exact, ok := planRows(t, ix, tt.expr)
		sort.Slice(tt.rows, func(i, j int) bool { return tt.rows[i] < tt.rows[j] })
		if !ok || exact != tt.exact || !(exact && slices.Equal(rows, tt.rows) || !exact && isSuperset(rows, tt.rows)) {
			t.Errorf("Plan(%s) = %v exact %v ok %v; want %v exact %v", tt.expr, rows, exact, ok, tt.rows, tt.exact)
		}
	}
	if _, _, ok := planRows(t, ix, `.other == 1`); ok {
		t.Error("Plan on an unindexed field is ok")
	}
	if _, _, ok := planRows(t, ix, `1 == 1`); ok {
		t.Error("Plan of an expression without fields is ok")
	}

	// Remove drops the postings that become empty; Add puts them back.
	before := ix.SizeInBytes()
	for i, a := range attrs {
		ix.Remove(uint32(i), []byte(a))
	}
	for _, f := range ix.fields {
		if f.strs.len()+f.elemStrs.len()+len(f.nums.buckets)+len(f.elemNums.buckets) != 0 ||
			!f.hasNum.IsEmpty() || !f.hasStr.IsEmpty() || !f.hasArr.IsEmpty() {
			t.Fatalf("postings left after removing every row: %+v", f)
		}
	}
	if after := ix.SizeInBytes(); after >= before {
		t.Errorf("SizeInBytes %d after removing everything, %d before", after, before)
	}
	for i, a := range attrs {
		ix.Add(uint32(i), []byte(a))
	}
	if rows, exact, _ := planRows(t, ix, `.user == "u7"`); !exact || !slices.Equal(rows, []uint32{1, 2}) {
		t.Errorf("after Remove and Add: %v %v", rows, exact)
	}
}

func isSuperset(rows, want []uint32) bool {
	for _, w := range want {
		if !slices.Contains(rows, w) {
			return false
		}
	}
	return true
}

func TestIndexAddFieldErrors(t *testing.T) {
	ix := NewIndex()
	none := func(func(uint32, []byte)) {}
	if err := ix.AddField("user", none); err != nil {
		t.Fatal(err)
	}
	if err := ix.AddField("user", none); !errors.Is(err, ErrFieldIndexed) {
		t.Errorf("second AddField(user): %v", err)
	}
	for _, bad := range []string{"", ".a", "a.", "a..b", "a b", string(make([]byte, 129))} {
		if err := ix.AddField(bad, none); !errors.Is(err, ErrBadField) {
			t.Errorf("AddField(%q): %v", bad, err)
		}
	}
	if !ix.RemoveField("user") || ix.RemoveField("user") || len(ix.Fields()) != 0 {
		t.Error("RemoveField")
	}
}

// zipfTenants gives each of n rows a tenant among 1,000 with Zipf-like
// sizes (s = 1.1, v = 4: the largest holds 5.7% of the rows, the smallest
// 0.011%).
func zipfTenants(n int, r *rand.Rand) []int {
	z := rand.NewZipf(r, 1.1, 4, 999)
	out := make([]int, n)
	for i := range out {
		out[i] = int(z.Uint64())
	}
	return out
}

func makeTenantAttrs(n int) [][]byte {
	r := rand.New(rand.NewPCG(5, 6))
	tenants := zipfTenants(n, r)
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(`{"tenant":"t` + itoa(tenants[i]) + `","kind":"k` + itoa(r.IntN(5)) +
			`","step":` + itoa(r.IntN(50)) + `,"ts":` + itoa(1700000000+i*30) + `}`)
	}
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestIndexTenants(t *testing.T) {
	attrs := makeTenantAttrs(20000)
	ix := NewIndex()
	for _, f := range []string{"tenant", "kind"} {
		if err := ix.AddField(f, func(yield func(uint32, []byte)) {
			for i, a := range attrs {
				yield(uint32(i), a)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, expr := range []string{`.tenant == "t0"`, `.tenant == "t999" and .kind == "k1"`,
		`.tenant in ["t3", "t4"] and not (.kind == "k0")`, `.kind != "k2" and .step < 10`} {
		e, _ := Parse(expr)
		rows, exact, ok := ix.Plan(e)
		want := roaring.New()
		for i, a := range attrs {
			if e.Match(a) {
				want.Add(uint32(i))
			}
		}
		if !ok || !roaring.AndNot(want, rows).IsEmpty() || exact && !rows.Equals(want) {
			t.Errorf("%s: %d rows exact %v ok %v; %d match", expr, rows.GetCardinality(), exact, ok, want.GetCardinality())
		}
	}
}
