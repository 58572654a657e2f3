package ann

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/memrl/memrl/ivfpq"
)

func TestIvecsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.ivecs")
	rows := [][]int32{{1, 2, 3}, {4, 5, 6}}
	if err := writeIvecs(path, rows); err != nil {
		t.Fatal(err)
	}
	got, err := readIvecs(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, rows, slices.Equal) {
		t.Fatalf("got %v", got)
	}
	// A file whose records disagree on dimension is refused.
	b, _ := os.ReadFile(path)
	b[16] = 9
	os.WriteFile(path, b, 0o644)
	if _, err := readIvecs(path, 0); err == nil {
		t.Fatal("bad record dimension accepted")
	}
}

func TestMainSyntheticWritesJSONAndIDs(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	var out strings.Builder
	err := Main([]string{"--synthetic", "3000", "--dim", "16", "--nq", "50", "--nlist", "16", "--pqm", "8",
		"--nprobe", "2,16", "--refine", "1,8", "--json", jsonPath, "--out-ids", filepath.Join(dir, "ids")}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var rs []map[string]any
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("%d results, want 4:\n%s", len(rs), out.String())
	}
	for _, k := range []string{"nprobe", "refine", "prune", "recall1", "recall10", "qps", "cpu_us", "p50_us", "p99_us", "build_s", "index_bytes"} {
		if _, ok := rs[0][k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if runtime.GOOS == "linux" && rs[0]["cpu_us"].(float64) <= 0 {
		t.Errorf("cpu_us %v, want the thread CPU time per query", rs[0]["cpu_us"])
	}
	if r := rs[3]["recall10"].(float64); r < 0.9 {
		t.Errorf("nprobe 16 refine 8 recall@10 %.3f:\n%s", r, out.String())
	}
	ids, err := readIvecs(filepath.Join(dir, "ids.nprobe16.refine8.ivecs"), 0)
	if err != nil || len(ids) != 50 || len(ids[0]) != 10 {
		t.Fatalf("ids file: %v, %d rows", err, len(ids))
	}
}

// TestPruneSweep: --prune adds a sweep dimension (each factor's row says
// which it is, the default being ivfpq.DefaultPruneFactor), a smaller
// factor prunes at least as many lists, and factors outside (0, 1] are
// refused.
func TestPruneSweep(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	base := []string{"--synthetic", "6000", "--dim", "16", "--nq", "50", "--nlist", "64", "--pqm", "8",
		"--nprobe", "32", "--refine", "4"}
	var out strings.Builder
	if err := Main(append(slices.Clone(base), "--prune", "1,0.5,0.1", "--json", jsonPath), &out); err != nil {
		t.Fatal(err)
	}
	var rs []result
	b, err := os.ReadFile(jsonPath)
	if err == nil {
		err = json.Unmarshal(b, &rs)
	}
	if err != nil || len(rs) != 3 {
		t.Fatalf("%v, %d results:\n%s", err, len(rs), out.String())
	}
	for i, want := range []float32{1, 0.5, 0.1} {
		if rs[i].Prune != want {
			t.Errorf("row %d: prune %v, want %v", i, rs[i].Prune, want)
		}
	}
	if !(rs[0].Pruned <= rs[1].Pruned && rs[1].Pruned <= rs[2].Pruned) {
		t.Errorf("lists pruned %v, %v, %v for factors 1, 0.5, 0.1: want non-decreasing", rs[0].Pruned, rs[1].Pruned, rs[2].Pruned)
	}
	out.Reset()
	if err := Main(append(slices.Clone(base), "--json", jsonPath), &out); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(jsonPath); err == nil {
		err = json.Unmarshal(b, &rs)
	}
	if err != nil || len(rs) != 1 || rs[0].Prune != ivfpq.DefaultPruneFactor {
		t.Fatalf("default sweep: %v, %+v", err, rs)
	}
	for _, bad := range []string{"0", "1.5", "-1", "NaN", "x", "0.5,"} {
		if err := Main(append(slices.Clone(base), "--prune", bad), &out); err == nil {
			t.Errorf("--prune %q accepted", bad)
		}
	}
}

// TestReuseIndex: a second run with --reuse-index opens the saved index
// (same recall, the first run's build time) and refuses one of another
// shape instead of silently rebuilding.
func TestReuseIndex(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--synthetic", "3000", "--dim", "16", "--nq", "50", "--nlist", "16", "--pqm", "8",
		"--nprobe", "4", "--refine", "4", "--index-dir", filepath.Join(dir, "ix")}
	run := func(extra ...string) ([]map[string]any, string, error) {
		jsonPath := filepath.Join(dir, "r.json")
		var out strings.Builder
		if err := Main(append(append(slices.Clone(args), extra...), "--json", jsonPath), &out); err != nil {
			return nil, out.String(), err
		}
		var rs []map[string]any
		b, err := os.ReadFile(jsonPath)
		if err == nil {
			err = json.Unmarshal(b, &rs)
		}
		return rs, out.String(), err
	}
	first, _, err := run("--reuse-index") // nothing saved yet: builds
	if err != nil {
		t.Fatal(err)
	}
	second, out, err := run("--reuse-index")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "reused from") {
		t.Fatalf("second run did not reuse the index:\n%s", out)
	}
	for _, k := range []string{"recall10", "build_s", "index_bytes"} {
		if first[0][k] != second[0][k] {
			t.Errorf("%s: built %v, reused %v", k, first[0][k], second[0][k])
		}
	}
	if _, out, err := run("--reuse-index", "--nlist", "32"); err == nil {
		t.Fatalf("reused an index of another shape:\n%s", out)
	}
	if err := Main([]string{"--synthetic", "100", "--reuse-index"}, &strings.Builder{}); err == nil {
		t.Fatal("--reuse-index without --index-dir accepted")
	}
}

// TestBatchSweep: --batch B --threads T searches in batches and reports
// the same recall and the same ids as one query per call (SearchBatch
// returns Search's results), with threads and batch in its JSON and the
// process's CPU time; a negative --batch is refused.
func TestBatchSweep(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--synthetic", "3000", "--dim", "16", "--nq", "70", "--nlist", "16", "--pqm", "8",
		"--nprobe", "3,12", "--threads", "2", "--index-dir", filepath.Join(dir, "ix")}
	var out strings.Builder
	if err := Main(append(args, "--json", filepath.Join(dir, "one.json"), "--out-ids", filepath.Join(dir, "one")), &out); err != nil {
		t.Fatal(err)
	}
	args = append(args, "--reuse-index", "--batch", "32")
	if err := Main(append(args, "--json", filepath.Join(dir, "b.json"), "--out-ids", filepath.Join(dir, "b")), &out); err != nil {
		t.Fatal(err)
	}
	read := func(name string) []map[string]any {
		var rs []map[string]any
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &rs); err != nil {
			t.Fatal(err)
		}
		return rs
	}
	one, batch := read("one.json"), read("b.json")
	if len(one) != 2 || len(batch) != 2 {
		t.Fatalf("%d and %d results, want 2 each:\n%s", len(one), len(batch), out.String())
	}
	for i := range one {
		if one[i]["recall10"] != batch[i]["recall10"] || batch[i]["batch"].(float64) != 32 || batch[i]["threads"].(float64) != 2 {
			t.Fatalf("setting %d: one query per call %v, batched %v", i, one[i], batch[i])
		}
		if runtime.GOOS == "linux" && batch[i]["cpu_us"].(float64) <= 0 {
			t.Errorf("cpu_us %v, want the process CPU time per query", batch[i]["cpu_us"])
		}
	}
	for _, np := range []string{"3", "12"} {
		a, err := readIvecs(filepath.Join(dir, "one.nprobe"+np+".refine16.ivecs"), 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := readIvecs(filepath.Join(dir, "b.nprobe"+np+".refine16.ivecs"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(a, b, slices.Equal) {
			t.Fatalf("nprobe %s: batched ids differ from one query per call", np)
		}
	}
	if err := Main([]string{"--synthetic", "100", "--batch", "-1"}, &out); err == nil {
		t.Fatal("--batch -1 accepted")
	}
}

// TestMapFilesSameResults: the sweep returns the same neighbours whether
// it reads the index and the base rows from huge-page copies (the
// default, as the engine does) or through the file mapping and the Go
// heap (--map-files); the base is 2.05 MiB, so the copy is past
// vfs.HugePage and outside the Go heap.
func TestMapFilesSameResults(t *testing.T) {
	dir := t.TempDir()
	ixDir := filepath.Join(dir, "ix")
	args := []string{"--synthetic", "4200", "--dim", "128", "--nq", "20", "--nlist", "16", "--pqm", "16",
		"--nprobe", "12", "--refine", "4", "--batch", "25", "--threads", "2", "--index-dir", ixDir, "--reuse-index"}
	ids := map[string][][]int32{}
	for _, mode := range []string{"resident", "mapped"} {
		a := append(slices.Clone(args), "--out-ids", filepath.Join(dir, mode))
		if mode == "mapped" {
			a = append(a, "--map-files")
		}
		var out strings.Builder
		if err := Main(a, &out); err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, out.String())
		}
		got, err := readIvecs(filepath.Join(dir, mode+".nprobe12.refine4.ivecs"), 0)
		if err != nil || len(got) != 20 {
			t.Fatalf("%s: ids file: %v, %d rows", mode, err, len(got))
		}
		ids[mode] = got
	}
	for i := range ids["resident"] {
		if !slices.Equal(ids["resident"][i], ids["mapped"][i]) {
			t.Fatalf("query %d: %v resident, %v mapped", i, ids["resident"][i], ids["mapped"][i])
		}
	}
}
