package server

import "testing"

// TestFilterHasAndPaths: `has` (Qdrant's match: equal, or an array
// holding the value) and nested paths filter MEM.COUNT, MEM.RETRIEVE and
// MEM.DEL, with and without the fields indexed (MEM.INDEX … ADD
// meta.source).
func TestFilterHasAndPaths(t *testing.T) {
	ts, _ := startMem(t)
	rdb := ts.client(t)
	mustDo(t, rdb, "MEM.CREATE", "m", "DIM", 2, "METRIC", "L2")
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 1, 0, "ATTRS", `{"tags":["travel","food"],"meta":{"source":"web"}}`)
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 2, 0, "ATTRS", `{"tags":"travel","meta":{"source":"api"}}`)
	mustDo(t, rdb, "MEM.ADD", "m", "VALUES", 2, 3, 0, "ATTRS", `{"tags":["food"],"meta":"web"}`)
	counts := map[string]int64{
		`.tags has "travel"`:                           2,
		`.tags has "food"`:                             2,
		`.tags has ["food", "x"]`:                      2,
		`.meta.source == "web"`:                        1,
		`.meta.source has ["web", "api"]`:              2,
		`.tags has "travel" and .meta.source == "web"`: 1,
	}
	check := func(what string) {
		t.Helper()
		for expr, want := range counts {
			if n := mustDo(t, rdb, "MEM.COUNT", "m", "FILTER", expr); n != want {
				t.Errorf("%s: MEM.COUNT FILTER %s = %v, want %d", what, expr, n, want)
			}
		}
		res := mustDo(t, rdb, "MEM.RETRIEVE", "m", "VALUES", 2, 0, 0, "K1", 5, "K2", 5, "FILTER", `.tags has "travel"`).([]any)
		if len(res) != 2 {
			t.Errorf("%s: MEM.RETRIEVE FILTER has = %v, want 2 memories", what, res)
		}
	}
	check("unindexed")
	mustDo(t, rdb, "MEM.INDEX", "m", "ADD", "tags")
	mustDo(t, rdb, "MEM.INDEX", "m", "ADD", "meta.source")
	check("indexed")
	wantErr(t, rdb, "cannot be indexed", "MEM.INDEX", "m", "ADD", "meta..source")
	wantErr(t, rdb, "left operand of has must be a field", "MEM.COUNT", "m", "FILTER", `"x" has .tags`)
	if n := mustDo(t, rdb, "MEM.DEL", "m", "FILTER", `.meta.source has "api"`); n != int64(1) {
		t.Fatalf("MEM.DEL FILTER = %v", n)
	}
}
