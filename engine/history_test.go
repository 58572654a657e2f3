package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// histClock is a fake clock a test advances by hand.
type histClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *histClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *histClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func histOpts(fs *vfs.MemFS, clock *histClock, n int) Options {
	o := crashOpts(fs)
	o.Now = clock.Now
	o.HistoryLen = n
	return o
}

func mustHistory(t *testing.T, c *Collection, r Ref, count int) []HistoryEntry {
	t.Helper()
	h, err := c.History(r, count)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// rewardModel applies rewards to memory id and records what its history
// must say, newest last.
type rewardModel struct {
	t     *testing.T
	c     *Collection
	clock *histClock
	want  map[uint64][]HistoryEntry
}

func (m *rewardModel) reward(id uint64, r float64) {
	m.t.Helper()
	m.clock.advance(1234 * time.Millisecond)
	qs, err := m.c.Reward(r, []uint64{id}, nil)
	if err != nil {
		m.t.Fatal(err)
	}
	mi, err := m.c.Get(id)
	if err != nil {
		m.t.Fatal(err)
	}
	if qs[0] != mi.Q {
		m.t.Fatalf("reward returned %v, Get %v", qs[0], mi.Q)
	}
	m.want[id] = append(m.want[id], HistoryEntry{Time: time.UnixMilli(m.clock.Now().UnixMilli()), Reward: r, Q: mi.Q, Visits: mi.Visits})
}

// check compares every memory's history with the model's last max.
func (m *rewardModel) check(c *Collection, max int) {
	m.t.Helper()
	for id, es := range m.want {
		got := mustHistory(m.t, c, ByID(id), 0)
		var want []HistoryEntry
		for i := len(es) - 1; i >= 0 && len(want) < max; i-- {
			want = append(want, es[i])
		}
		if len(want) == 0 {
			want = []HistoryEntry{}
		}
		for i := range min(len(got), len(want)) {
			if got[i].Time.Equal(want[i].Time) {
				got[i].Time = want[i].Time // compare instants, not locations
			}
		}
		if !reflect.DeepEqual(got, want) {
			m.t.Fatalf("history of %d:\n got %v\nwant %v", id, got, want)
		}
	}
}

var histRewards = []float64{1, -1, 0, 0.5, 0.1, 1e-3, 125, -125, 126, -0.25, 3e10, math.Copysign(0, -1)}

// TestHistoryAfterRewards: entries are the rewards applied, newest first,
// with Q after (the Q Get reports), visits and time; COUNT takes the
// newest; a key names the memory; a memory never rewarded has none; an
// unknown memory or a dropped collection is an error.
func TestHistoryAfterRewards(t *testing.T) {
	clock := &histClock{now: time.Unix(1_800_000_000, 0)}
	db := openMemWith(t, histOpts(vfs.NewMemFS(), clock, 0))
	defer db.Close()
	c := mustColl(t, db, "h", crashCfg)
	addN(t, c, 1, 4)
	if _, err := c.Add(AddRequest{Vector: []float32{1, 1, 1, 1}, Key: "k", ID: 10, HasID: true}); err != nil {
		t.Fatal(err)
	}
	m := &rewardModel{t: t, c: c, clock: clock, want: map[uint64][]HistoryEntry{}}
	for i, r := range histRewards {
		m.reward(1, r)
		if i%3 == 0 {
			m.reward(10, r)
		}
	}
	m.check(c, DefaultHistoryLen)
	if h := mustHistory(t, c, ByID(1), 3); len(h) != 3 || h[0].Visits != uint64(len(histRewards)) || h[2].Visits != uint64(len(histRewards)-2) {
		t.Fatalf("COUNT 3: %v", h)
	}
	if h := mustHistory(t, c, ByKey("k"), 1); len(h) != 1 || h[0].Reward != histRewards[len(histRewards)-3] {
		t.Fatalf("by key: %v", h)
	}
	if h := mustHistory(t, c, ByID(2), 0); h == nil || len(h) != 0 {
		t.Fatalf("never rewarded: %#v", h)
	}
	if !math.Signbit(mustHistory(t, c, ByID(1), 1)[0].Reward) {
		t.Fatal("-0 reward lost its sign")
	}
	if _, err := c.History(ByID(99), 0); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := c.History(ByKey("nope"), 0); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("unknown key: %v", err)
	}
	if hm := c.HistoryMemory(); hm.Memories != 2 || hm.Entries != len(histRewards)+4 {
		t.Fatalf("HistoryMemory %+v", hm)
	}
	if err := db.Drop("h"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.History(ByID(1), 0); !errors.Is(err, ErrNoCollection) {
		t.Fatalf("dropped collection: %v", err)
	}
}

// TestHistoryDedupMerge: an ADD … DEDUP merge sets Q without a reward: an
// entry with the visits unchanged.
func TestHistoryDedupMerge(t *testing.T) {
	clock := &histClock{now: time.Unix(1_800_000_000, 0)}
	db := openMemWith(t, histOpts(vfs.NewMemFS(), clock, 0))
	defer db.Close()
	c := mustColl(t, db, "h", crashCfg)
	add(t, c, 1, 0, 1, 0, 0, 0)
	c.Reward(1, []uint64{1}, nil)
	id, err := c.Add(AddRequest{Vector: []float32{1, 0, 0, 0}, Q: 9, HasQ: true, Dedup: 0, HasDedup: true, DedupMerge: DedupMax})
	if err != nil || id != 1 {
		t.Fatalf("dedup add: %d %v", id, err)
	}
	h := mustHistory(t, c, ByID(1), 0)
	if len(h) != 2 || h[0].Q != 9 || h[0].Visits != 1 || h[0].Reward != 1 || h[1].Q != 0.5 {
		t.Fatalf("after a merge: %v", h)
	}
}

// TestHistoryBound: a memory keeps its latest HistoryLen entries.
func TestHistoryBound(t *testing.T) {
	clock := &histClock{now: time.Unix(1_800_000_000, 0)}
	db := openMemWith(t, histOpts(vfs.NewMemFS(), clock, 4))
	defer db.Close()
	c := mustColl(t, db, "h", crashCfg)
	addN(t, c, 1, 3)
	m := &rewardModel{t: t, c: c, clock: clock, want: map[uint64][]HistoryEntry{}}
	for i := range 11 {
		m.reward(1, histRewards[i%len(histRewards)])
		m.check(c, 4)
	}
	if hm := c.HistoryMemory(); hm.Entries != 4 {
		t.Fatalf("%+v", hm)
	}
}

// TestHistoryDisabled: HistoryLen < 0 keeps nothing; above MaxHistoryLen
// is refused.
func TestHistoryDisabled(t *testing.T) {
	clock := &histClock{now: time.Unix(1_800_000_000, 0)}
	if _, err := Open("/db", histOpts(vfs.NewMemFS(), clock, MaxHistoryLen+1)); !errors.Is(err, ErrBadHistoryLen) {
		t.Fatalf("HistoryLen too large: %v", err)
	}
	db := openMemWith(t, histOpts(vfs.NewMemFS(), clock, -1))
	defer db.Close()
	c := mustColl(t, db, "h", crashCfg)
	addN(t, c, 1, 2)
	c.Reward(1, []uint64{1}, nil)
	if h := mustHistory(t, c, ByID(1), 0); len(h) != 0 {
		t.Fatalf("disabled: %v", h)
	}
}

func openMemWith(t *testing.T, o Options) *DB {
	t.Helper()
	db, err := Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestHistoryRestart: histories survive a crash (replay only), a full
// checkpoint, a delta, and a delta taken while rewards ran between its
// position and its copy (replay must not double those entries); reopening
// with a smaller HistoryLen keeps the newest.
func TestHistoryRestart(t *testing.T) {
	clock := &histClock{now: time.Unix(1_800_000_000, 0)}
	fs := vfs.NewMemFS()
	db := openMemWith(t, histOpts(fs, clock, 0))
	c := mustColl(t, db, "h", crashCfg)
	addN(t, c, 1, 60) // deltas of 4 memories stay deltas
	m := &rewardModel{t: t, c: c, clock: clock, want: map[uint64][]HistoryEntry{}}
	rng := rand.New(rand.NewSource(1))
	rewards := func(n int) {
		for range n {
			m.reward(uint64(1+rng.Intn(4)), histRewards[rng.Intn(len(histRewards))])
		}
	}
	reopen := func(n int) {
		t.Helper()
		var err error
		fs = fs.Crash(vfs.DropUnsynced, rng)
		if db, err = Open("/db", histOpts(fs, clock, n)); err != nil {
			t.Fatal(err)
		}
		if c, err = db.Collection("h"); err != nil {
			t.Fatal(err)
		}
		m.c = c
	}
	rewards(40)
	reopen(0) // the log only
	m.check(c, DefaultHistoryLen)
	rewards(40)
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}
	reopen(0) // the full checkpoint, nothing replayed
	m.check(c, DefaultHistoryLen)
	rewards(30)
	if err := db.Checkpoint(); err != nil { // a delta
		t.Fatal(err)
	}
	cp := readCkpt(t, fs, "/db/CHECKPOINT.1")
	for _, mem := range cp.colls[0].mems {
		if len(mem.sections) != 1 || mem.sections[0].Tag != memSectHistory {
			t.Fatalf("delta memory %d sections %v", mem.id, mem.sections)
		}
	}
	rewards(30)
	reopen(0) // full + delta + log
	m.check(c, DefaultHistoryLen)

	// Rewards between a delta's position and its copy: the delta holds
	// their entries and replay meets their records again.
	ran := false
	afterDeltaSwap = func(*Collection) { rewards(3); ran = true }
	err := db.Checkpoint()
	afterDeltaSwap = nil
	if err != nil || !ran {
		t.Fatalf("delta with rewards in it: %v (ran %v)", err, ran)
	}
	reopen(0)
	m.check(c, DefaultHistoryLen)
	reopen(5)
	m.check(c, 5)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryRemovedWithMemory: a delete removes the history, and an id
// added again starts afresh, also after a restart.
func TestHistoryRemovedWithMemory(t *testing.T) {
	clock := &histClock{now: time.Unix(1_800_000_000, 0)}
	fs := vfs.NewMemFS()
	db := openMemWith(t, histOpts(fs, clock, 0))
	c := mustColl(t, db, "h", crashCfg)
	addN(t, c, 1, 4)
	for range 3 {
		c.Reward(1, []uint64{1, 2, 3}, nil)
	}
	db.CheckpointFull()
	if _, err := c.Delete([]uint64{1, 2}); err != nil {
		t.Fatal(err)
	}
	addN(t, c, 2, 3) // 2 again
	if _, err := c.History(ByID(1), 0); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("deleted: %v", err)
	}
	if hm := c.HistoryMemory(); hm.Memories != 1 {
		t.Fatalf("after deletes %+v", hm)
	}
	for _, step := range []string{"replay", "delta"} {
		if step == "delta" {
			db.Checkpoint()
		}
		fs = fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(2)))
		var err error
		if db, err = Open("/db", histOpts(fs, clock, 0)); err != nil {
			t.Fatal(err)
		}
		c, _ = db.Collection("h")
		if h := mustHistory(t, c, ByID(2), 0); len(h) != 0 {
			t.Fatalf("%s: re-added memory has history %v", step, h)
		}
		if h := mustHistory(t, c, ByID(3), 0); len(h) != 3 {
			t.Fatalf("%s: memory 3 has %v", step, h)
		}
		if hm := c.HistoryMemory(); hm.Memories != 1 {
			t.Fatalf("%s: %+v", step, hm)
		}
	}
	db.Close()
}

// TestHistorySectionCorruptRefused: a history section that does not decode
// (in a file whose checksum is right: a bug, or a newer build's format)
// stops Open with ErrCorruptCheckpoint.
func TestHistorySectionCorruptRefused(t *testing.T) {
	clock := &histClock{now: time.Unix(1_800_000_000, 0)}
	fs := vfs.NewMemFS()
	db := openMemWith(t, histOpts(fs, clock, 0))
	c := mustColl(t, db, "h", crashCfg)
	addN(t, c, 1, 3)
	c.Reward(0.5, []uint64{1}, nil)
	c.Reward(1, []uint64{1}, nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	good := readCkpt(t, fs, "/db/CHECKPOINT")
	var sect []byte
	for _, m := range good.colls[0].mems {
		if len(m.sections) > 0 {
			sect = m.sections[0].Data
		}
	}
	if sect == nil {
		t.Fatal("no history section written")
	}
	damage := map[string]func([]byte) []byte{
		"version": func(b []byte) []byte { b[0] = 2; return b },
		"empty":   func(b []byte) []byte { return b[:0] },
		"count 0": func(b []byte) []byte { return append(b[:1:1], 1, 0) },
		"short":   func(b []byte) []byte { return b[:len(b)-1] },
		"long":    func(b []byte) []byte { return append(b, 0) },
		"kind":    func(b []byte) []byte { b[len(b)-9] = 0xFC; return b },
	}
	for name, f := range damage {
		cp := readCkpt(t, fs, "/db/CHECKPOINT")
		for i, m := range cp.colls[0].mems {
			if len(m.sections) > 0 {
				cp.colls[0].mems[i].sections[0].Data = f(append([]byte(nil), sect...))
			}
		}
		fs2 := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
		if err := vfs.WriteFileAtomic(fs2, "/db/CHECKPOINT", encodeCheckpoint(cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := Open("/db", histOpts(fs2, clock, 0)); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Fatalf("%s: Open: %v", name, err)
		}
	}
}

// BenchmarkReward measures a reward of one memory (no fsync: the log's
// SyncNone), with the history on and off.
func BenchmarkReward(b *testing.B) {
	for _, hl := range []int{0, -1} {
		name := map[int]string{0: "history", -1: "nohistory"}[hl]
		b.Run(name, func(b *testing.B) {
			db, err := Open(b.TempDir(), Options{Sync: wal.SyncNone, CheckpointInterval: -1, CheckpointBytes: -1,
				Logf: func(string, ...any) {}, HistoryLen: hl})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.Create("b", NewConfig(4))
			c, _ := db.Collection("b")
			const n = 10000
			for i := range n {
				c.Add(AddRequest{Vector: []float32{1, 2, 3, float32(i)}})
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewSource(rand.Int63()))
				ids := []uint64{0}
				for pb.Next() {
					ids[0] = 1 + uint64(rng.Intn(n))
					if _, _, err := c.RewardDeferred(1, ids, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkRecordHistory measures one entry appended to a full history
// (the reward path's added cost), over 100k memories.
func BenchmarkRecordHistory(b *testing.B) {
	for _, n := range []uint64{1000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchRecordHistory(b, n) })
	}
}

func benchRecordHistory(b *testing.B, n uint64) {
	c := &Collection{db: &DB{}}
	for id := uint64(1); id <= n; id++ {
		for v := uint64(1); v <= DefaultHistoryLen; v++ {
			c.recordHistory(v, qRec{ID: id, Q: float64(v) / 3, Visits: v, LastReward: 1, Updated: 1_800_000_000_000_000_000 + int64(v)*1e9})
		}
	}
	b.ResetTimer()
	for i := range b.N {
		id := 1 + uint64(i)%n
		v := DefaultHistoryLen + 1 + uint64(i)/n
		c.recordHistory(v, qRec{ID: id, Q: float64(v) / 3, Visits: v, LastReward: float64(i & 1), Updated: 1_800_000_000_000_000_000 + int64(v)*1e9})
	}
}

// BenchmarkHistoryHeap reports the heap a full history (32 entries of
// integer rewards a second or so apart) takes per memory, everything
// included (map, slice headers, arrays), over 100k memories.
func BenchmarkHistoryHeap(b *testing.B) {
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := &Collection{db: &DB{}}
		const n = 100_000
		for id := uint64(1); id <= n; id++ {
			for v := uint64(1); v <= DefaultHistoryLen; v++ {
				c.recordHistory(v+id<<6, qRec{ID: id, Q: float64(v) / 3, Visits: v, LastReward: float64(v & 1), Updated: 1_800_000_000_000_000_000 + int64(v)*1_234_000_000})
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		hm := c.HistoryMemory()
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/memory")
		b.ReportMetric(float64(hm.Bytes)/n, "logB/memory")
		runtime.KeepAlive(c)
	}
}
