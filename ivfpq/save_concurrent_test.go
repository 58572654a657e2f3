package ivfpq

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
)

// TestSaveLetsAddsThrough checks that Save does not hold the index lock
// while it writes and syncs: with every fsync taking delay, adds made
// while a save runs each return in a small part of it, and the file holds
// exactly the rows the index had when the save began (each list a prefix
// of the list in memory), for 4-bit codes (whose tails end mid-block) and
// 8-bit ones, from an index with both mapped bases and tails.
func TestSaveLetsAddsThrough(t *testing.T) {
	const n, extra, d = 3000, 3000, 16
	// The sync delay is long and the bound half of it so that a loaded
	// machine's scheduling (an add took 66 ms under a load average of 17)
	// cannot pass for an add that waited for the save's sync.
	const delay = 600 * time.Millisecond
	base := clustered(n+extra, d, 20, 5)
	for _, bits := range []int{4, 8} {
		p := Params{Dim: d, NList: 16, M: 8, Bits: bits, Metric: L2}
		fs := vfs.NewMemFS()
		for _, dir := range []string{"a", "b"} {
			if err := fs.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		built := buildIndex(t, p, base[:n*d], n)
		if err := built.Save(fs, "a"); err != nil {
			t.Fatal(err)
		}
		built.Close()
		ix, err := Open(fs, "a")
		if err != nil {
			t.Fatal(err)
		}
		row := uint32(n)
		add := func() time.Duration {
			start := time.Now()
			if err := ix.Add(row, base[int(row)*d:int(row+1)*d]); err != nil {
				t.Fatal(err)
			}
			row++
			return time.Since(start)
		}
		for range 101 { // tails of a few vectors each, 4-bit blocks partly filled
			add()
		}
		before := row

		fs.SetSyncDelay(delay)
		done := make(chan error, 1)
		go func() { done <- ix.Save(fs, "b") }()
		var worst time.Duration
	adding:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				break adding
			default:
			}
			if int(row) == n+extra {
				t.Fatal("the save outlasted every add")
			}
			worst = max(worst, add())
			time.Sleep(time.Millisecond)
		}
		fs.SetSyncDelay(0)
		t.Logf("bits %d: %d adds during the save, the slowest %v (each fsync %v)", bits, row-before, worst, delay)
		if worst > delay/2 {
			t.Fatalf("bits %d: an add during the save took %v: it waited for the save's sync (%v)", bits, worst, delay)
		}

		saved, err := Open(fs, "b")
		if err != nil {
			t.Fatal(err)
		}
		if err := saved.Verify(); err != nil {
			t.Fatal(err)
		}
		r0 := saved.Rows()
		if r0 < before || r0 >= row {
			t.Fatalf("bits %d: the file holds %d rows; the index had %d when the save began and %d when it ended (adds kept coming)", bits, r0, before, row)
		}
		code, code2 := make([]byte, p.M), make([]byte, p.M)
		total := 0
		for l := range p.NList {
			gotIDs, gotCodes := mergedList(&saved.lists[l], p)
			allIDs, allCodes := mergedList(&ix.lists[l], p)
			k := 0
			for k < len(allIDs) && allIDs[k] < r0 {
				k++
			}
			if !slices.Equal(gotIDs, allIDs[:k]) {
				t.Fatalf("bits %d list %d: saved ids are not the list's rows below %d", bits, l, r0)
			}
			for i := range k {
				if bits == 8 {
					copy(code, gotCodes[i*p.M:(i+1)*p.M])
					copy(code2, allCodes[i*p.M:(i+1)*p.M])
				} else {
					getCode4(gotCodes, i, p.M, code)
					getCode4(allCodes, i, p.M, code2)
				}
				if !bytes.Equal(code, code2) {
					t.Fatalf("bits %d list %d vector %d: saved code %v, index %v", bits, l, i, code, code2)
				}
			}
			if bits == 4 && k%32 != 0 { // the cleared slots of a partial block
				blk := gotCodes[len(gotCodes)-block4Bytes(p.M):]
				for g := 0; g < len(blk); g += 32 {
					for j := k % 32; j < 32; j++ {
						if blk[g+j] != 0 {
							t.Fatalf("bits %d list %d: slot %d past the last vector is %#x, want 0", bits, l, j, blk[g+j])
						}
					}
				}
			}
			total += k
		}
		if total != int(r0) {
			t.Fatalf("bits %d: lists hold %d vectors, header %d", bits, total, r0)
		}
		saved.Close()
		ix.Close()
	}
}
