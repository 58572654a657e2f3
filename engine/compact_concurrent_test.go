package engine

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// TestCompactConcurrentWithWrites runs compactions (in tiny chunks, so that
// their copy interleaves with everything) while writers add, reward,
// replace payloads and delete, and readers retrieve, get and scan; then
// checks the collection against the writers' models, also after a
// restart. Run it with -race.
func TestCompactConcurrentWithWrites(t *testing.T) {
	old := compactChunk
	compactChunk = 4
	defer func() { compactChunk = old }()
	for name, cfg := range map[string]Config{
		"exact": flatCfg, // below its training threshold: exact scans
		"ivfpq": {Dim: 8, Metric: L2, Alpha: 0.5, Indexed: []string{"g"}, Index: IndexConfig{Kind: IndexIVFPQ, NList: 8, TrainThreshold: 300}},
	} {
		t.Run(name, func(t *testing.T) { testCompactConcurrent(t, cfg) })
	}
}

func testCompactConcurrent(t *testing.T, cfg Config) {
	fs := vfs.NewMemFS()
	var remapFailed atomic.Value // a compaction that fell back on an exact scan is a bug here
	logf := func(f string, a ...any) {
		if strings.Contains(f, "could not") {
			remapFailed.Store(fmt.Sprintf(f, a...))
		}
	}
	db, err := Open("/db", Options{FS: fs, Sync: wal.SyncNone, CheckpointInterval: -1, CheckpointBytes: -1,
		CompactShare: -1, Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	c := mustColl(t, db, "c", cfg)
	const writers, perWriter = 3, 300
	models := make([]*compactFixture, writers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 16)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	for w := 0; w < writers; w++ {
		f := &compactFixture{fs: fs, db: db, c: c, live: map[uint64]mMem{}, deleted: map[uint64]bool{}}
		models[w] = f
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			base := uint64(w+1) * 1_000_000
			vecs := clustered(rng, perWriter, cfg.Dim)
			for i := 0; i < perWriter; i++ {
				id := base + uint64(i)
				p := []byte(fmt.Sprintf("p%d", id))
				attrs := fmt.Sprintf(`{"g":%d}`, id%4)
				if _, err := c.Add(AddRequest{Vector: vecs[i], Payload: p, ID: id, HasID: true, Q: 1, HasQ: true, Attrs: []byte(attrs)}); err != nil {
					fail(err)
					return
				}
				f.live[id] = mMem{vec: vecs[i], payload: p, q: 1, attrs: attrs}
				delete(f.deleted, id)
				switch rng.Intn(4) {
				case 0: // delete an earlier one
					victim := base + uint64(rng.Intn(i+1))
					if _, ok := f.live[victim]; ok {
						if _, err := c.Delete([]uint64{victim}); err != nil {
							fail(err)
							return
						}
						delete(f.live, victim)
						f.deleted[victim] = true
					}
				case 1: // reward one
					r := base + uint64(rng.Intn(i+1))
					if m, ok := f.live[r]; ok {
						qs, err := c.Reward(1, []uint64{r}, nil)
						if err != nil {
							fail(err)
							return
						}
						m.q, m.visits = qs[0], m.visits+1
						f.live[r] = m
					}
				case 2: // replace a payload
					r := base + uint64(rng.Intn(i+1))
					if m, ok := f.live[r]; ok {
						np := []byte(fmt.Sprintf("new %d %d", r, i))
						if err := c.SetPayload(ByID(r), np); err != nil {
							fail(err)
							return
						}
						m.payload = np
						f.live[r] = m
					}
				}
			}
		}(w)
	}
	// Readers: every retrieval, get and scan succeeds and returns whole
	// memories.
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func(r int) {
			defer readers.Done()
			rng := rand.New(rand.NewSource(int64(100 + r)))
			q := make([]float32, cfg.Dim)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range q {
					q[i] = rng.Float32() * 10
				}
				opt := NewRetrieveOptions()
				opt.K1, opt.K2 = 10, 5
				res, err := c.Retrieve(q, opt)
				if err != nil {
					fail(fmt.Errorf("retrieve: %w", err))
					return
				}
				for _, m := range res {
					if _, err := c.Get(m.ID); err != nil && !errors.Is(err, ErrNoMemory) {
						fail(fmt.Errorf("get: %w", err))
						return
					}
				}
				if _, _, err := c.Scan(0, ScanOptions{Count: 50, WithPayload: true, WithVector: true}); err != nil {
					fail(fmt.Errorf("scan: %w", err))
					return
				}
			}
		}(r)
	}
	// Compactions, one after another, while the writers run.
	compactions := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
loop:
	for {
		select {
		case <-done:
			break loop
		default:
		}
		if _, err := c.Compact(); err != nil {
			t.Fatal(err)
		}
		compactions++
	}
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	readers.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if msg := remapFailed.Load(); msg != nil {
		t.Fatal(msg)
	}
	in, _ := c.Info()
	t.Logf("%d compactions during the writes; index %s", compactions+1, in.Index)
	merged := &compactFixture{fs: fs, db: db, c: c, live: map[uint64]mMem{}, deleted: map[uint64]bool{}}
	for _, f := range models {
		for id, m := range f.live {
			merged.live[id] = m
		}
		for id := range f.deleted {
			merged.deleted[id] = true
		}
	}
	merged.check(t, c)
	if n := c.DeletedRows(); n != 0 {
		t.Fatalf("%d dead rows after the last compaction", n)
	}
	db2 := merged.reopen(t, false)
	c2, _ := db2.Collection("c")
	merged.check(t, c2)
}
