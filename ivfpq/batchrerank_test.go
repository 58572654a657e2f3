package ivfpq

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestRerankSharedWithIdleWorker holds the owner of a batch's larger chunk
// at the start of its re-rank until the other worker, its own chunk done,
// has re-ranked every query of it, so the whole re-rank runs on a helper;
// the answers must still be Search's (SearchFiltered's, MinSim's widening
// included), and under -race nothing the two share may be written by both.
func TestRerankSharedWithIdleWorker(t *testing.T) {
	const n, nq, d = 4000, 31, 32 // on 2 workers: chunks of 16 and 15 queries
	all := clustered(n+nq, d, 40, 37)
	base, qs := all[:n*d], all[n*d:]
	ix := buildIndex(t, Params{Dim: d, NList: 64, M: 16, Bits: 4, Metric: L2}, base, 3000)
	src := sliceSource{base, d}
	sp := SearchParams{NProbe: 12}
	var tenth []float32
	for i := range nq {
		res, _ := ix.Search(qs[i*d:(i+1)*d], 10, sp, nil, src)
		tenth = append(tenth, res[9].Sim)
	}
	slices.Sort(tenth)

	var held, helped atomic.Int32
	testHookRerankOpen = func(job *rerankJob) {
		if job.n != 16 {
			return
		}
		held.Add(1)
		deadline := time.Now().Add(30 * time.Second)
		for job.done.Load() < int32(job.n) && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		helped.Store(job.helped.Load())
	}
	defer func() { testHookRerankOpen = nil }()

	for name, f := range map[string]Filter{
		"none":   {},
		"minsim": {MinSim: tenth[nq/2], HasMinSim: true},
	} {
		held.Store(0)
		helped.Store(0)
		got, st, err := ix.SearchBatchFiltered(qs, 10, sp, f, src, 2)
		if err != nil {
			t.Fatal(err)
		}
		if held.Load() != 1 {
			t.Fatalf("%s: the larger chunk's re-rank opened %d times, want 1", name, held.Load())
		}
		if h := helped.Load(); h+int32(st.Alone) < 16 || h == 0 {
			// Queries that widen are marked by the helper but not
			// counted as re-ranked by it.
			t.Fatalf("%s: the idle worker re-ranked %d of the held chunk's 16 queries (%d searched alone)", name, h, st.Alone)
		}
		matchesSearchFiltered(t, name, ix, qs, got, sp, f, src)
	}
}
