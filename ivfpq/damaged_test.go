package ivfpq

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memrl/memrl/vfs"
)

// TestDamagedListSearchedAround: a flipped byte in one list of a saved
// index. Searches with vectors score that list's rows exactly and find
// them (each row, as a query, comes back first), report the damage, and
// recall no worse than the intact file; without vectors the search fails
// with ErrCorrupt, and Verify names the list.
func TestDamagedListSearchedAround(t *testing.T) {
	const n, d = 6000, 32
	for _, tc := range []struct {
		name string
		p    Params
		unit bool
	}{
		{"L2PQ4", Params{Dim: d, NList: 32, M: 16, Bits: 4, Metric: L2}, false},
		{"IPunitPQ8", Params{Dim: d, NList: 32, M: 8, Bits: 8, Metric: IP}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := clustered(n+50, d, 40, 7)
			if tc.unit {
				normalize(all, d)
			}
			base, queries := all[:n*d], all[n*d:]
			ix := buildIndex(t, tc.p, base, 3000)
			dir := t.TempDir()
			if err := ix.Save(vfs.Default, dir); err != nil {
				t.Fatal(err)
			}
			ix.Close()
			intact, err := Open(vfs.Default, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer intact.Close()
			l := 0
			for i := range intact.lists {
				if len(intact.lists[i].base.ids) > len(intact.lists[l].base.ids) {
					l = i
				}
			}
			rows := slices.Clone(intact.lists[l].base.ids)

			path := filepath.Join(dir, FileName)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			h, err := decodeHeader(b, uint64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			e, _ := getDirEntry(b[h.dirOff+uint64(l)*dirEntrySize:], h.terms16())
			b[h.dataOff+e.off+pad8(4*uint64(e.n))+1] ^= 0x04 // a code byte
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			ix, err = Open(vfs.Default, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()

			src := sliceSource{base, d}
			sp := SearchParams{NProbe: 8}
			vec := func(r uint32) []float32 { return base[int(r)*d : int(r+1)*d] }
			if _, err := ix.Search(vec(rows[0]), 10, sp, nil, nil); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("search without vectors: %v, want ErrCorrupt", err)
			}
			for _, r := range rows {
				res, st, err := ix.SearchFiltered(vec(r), 10, sp, Filter{}, src)
				if err != nil || !st.Damaged || len(res) != 10 || res[0].Row != r {
					t.Fatalf("row %d of damaged list %d as a query: %v, damaged %v, %v", r, l, res, st.Damaged, err)
				}
				if res, err := ix.Search(vec(r), 10, sp, nil, src); err != nil || len(res) != 10 || res[0].Row != r {
					t.Fatalf("Search, row %d of damaged list %d as a query: %v, %v", r, l, res, err)
				}
			}
			ix.mu.RLock()
			orphans := ix.orphansLocked()
			ix.mu.RUnlock()
			if want := slices.Sorted(slices.Values(rows)); !slices.Equal(orphans, want) {
				t.Fatalf("orphans: %d rows, want list %d's %d", len(orphans), l, len(want))
			}
			ri := recallAt(t, intact, base, queries, d, 10, sp)
			rd := recallAt(t, ix, base, queries, d, 10, sp)
			t.Logf("recall@10: intact %.3f, list %d of %d rows damaged %.3f", ri, l, len(rows), rd)
			if rd < ri-0.01 {
				t.Fatalf("recall@10 with the damaged list %.3f, intact %.3f", rd, ri)
			}
			// A filter applies to the damaged list's rows too.
			f := Filter{Match: func(row uint32) bool { return row != rows[0] }}
			if res, _, err := ix.SearchFiltered(vec(rows[0]), 10, sp, f, src); err != nil || slices.ContainsFunc(res, func(n Neighbor) bool { return n.Row == rows[0] }) {
				t.Fatalf("filtered search: %v, %v; row %d filtered out", res, err, rows[0])
			}
			if err := ix.Verify(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "list") {
				t.Fatalf("verify: %v", err)
			}
		})
	}
}
