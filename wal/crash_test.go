package wal

import (
	"bytes"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memrl/memrl/vfs"
)

// crashRecord is "g<goroutine>:<seq>:" plus filler, so that a replayed
// record can be traced to the Append that wrote it.
func crashRecord(g, seq int, rng *rand.Rand) []byte {
	b := []byte(fmt.Sprintf("g%d:%d:", g, seq))
	return append(b, bytes.Repeat([]byte{byte(seq)}, rng.Intn(700))...)
}

func parseCrashRecord(t *testing.T, rec []byte) (g, seq int) {
	t.Helper()
	if _, err := fmt.Sscanf(string(rec), "g%d:%d:", &g, &seq); err != nil {
		t.Fatalf("replayed a record nobody wrote: %q", rec[:min(len(rec), 40)])
	}
	return g, seq
}

// TestCrashKeepsAcknowledgedRecords runs SyncAlways appenders (and a
// rotating checkpointer), crashes the MemFS at a random moment with each
// CrashMode, reopens, and checks: every record acknowledged before the
// crash is present with its LSN and contents, LSNs are dense from 1,
// each goroutine's records are in its order, nothing was invented; then
// that the log keeps working after recovery.
func TestCrashKeepsAcknowledgedRecords(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
		for seed := 0; seed < seeds; seed++ {
			t.Run(fmt.Sprintf("%v/%d", mode, seed), func(t *testing.T) {
				crashOnce(t, mode, int64(seed))
			})
		}
	}
}

type ack struct {
	lsn LSN
	rec []byte
}

func crashOnce(t *testing.T, mode vfs.CrashMode, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	fs := vfs.NewMemFS()
	fs.SetSyncDelay(50 * time.Microsecond)
	opts := Options{FS: fs, Dir: "/log", SegmentSize: int64(2048 + rng.Intn(8192))}
	l, _ := mustOpen(t, opts)

	const goroutines = 6
	var (
		mu    sync.Mutex
		acked = map[[2]int]ack{} // guarded by mu
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed*100 + int64(g)))
			for seq := 0; !stop.Load(); seq++ {
				rec := crashRecord(g, seq, r)
				lsn, err := l.Append(rec)
				if err != nil {
					return // closed after the crash
				}
				mu.Lock()
				acked[[2]int{g, seq}] = ack{lsn, rec}
				mu.Unlock()
			}
		}(g)
	}
	var maxCut atomic.Uint64 // largest LSN passed to RemoveBefore
	wg.Add(1)
	go func() { // checkpointer: rotates now and then, sometimes compacts
		defer wg.Done()
		r := rand.New(rand.NewSource(seed + 7))
		var prev LSN
		for !stop.Load() {
			time.Sleep(time.Duration(r.Intn(2000)) * time.Microsecond)
			cut, err := l.Rotate()
			if err != nil {
				return
			}
			if prev > 0 && r.Intn(2) == 0 {
				maxCut.Store(uint64(prev))
				if err := l.RemoveBefore(prev); err != nil {
					return
				}
			}
			prev = cut
		}
	}()

	// Crash once a random number of records has been acknowledged.
	target := 1 + rng.Intn(600)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= target {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	// Snapshot the acknowledgements first, then crash: everything in the
	// snapshot was fsynced before the crash.
	mu.Lock()
	want := make(map[[2]int]ack, len(acked))
	for k, v := range acked {
		want[k] = v
	}
	mu.Unlock()
	crashed := fs.Crash(mode, rand.New(rand.NewSource(seed)))
	stop.Store(true)
	wg.Wait()
	l.Close()

	opts.FS = crashed
	l2, rep := mustOpen(t, opts)
	// Compaction may have removed acknowledged records, but only below a
	// cut that was requested.
	if rep.FirstLSN > 1 && uint64(rep.FirstLSN) > maxCut.Load() {
		t.Fatalf("log starts at LSN %d, but no RemoveBefore beyond %d was requested", rep.FirstLSN, maxCut.Load())
	}
	for k, a := range want {
		if a.lsn < rep.FirstLSN {
			delete(want, k)
		}
	}
	got := replayAll(t, l2, rep.FirstLSN)
	t.Logf("acknowledged %d, recovered %d in %d segments, torn %+v", len(want), len(got), rep.Segments, rep.Torn)
	if LSN(len(got)) != rep.NextLSN-rep.FirstLSN {
		t.Fatalf("replayed %d records but NextLSN is %d", len(got), rep.NextLSN)
	}
	byKey := map[[2]int]LSN{}
	lastSeq := map[int]int{}
	for i, r := range got {
		if r.lsn != rep.FirstLSN+LSN(i) {
			t.Fatalf("LSNs not dense: record %d has LSN %d", i, r.lsn)
		}
		g, seq := parseCrashRecord(t, r.rec)
		if prev, ok := lastSeq[g]; ok && seq <= prev {
			t.Fatalf("goroutine %d: seq %d after %d", g, seq, prev)
		}
		lastSeq[g] = seq
		byKey[[2]int{g, seq}] = r.lsn
		if a, ok := want[[2]int{g, seq}]; ok && (a.lsn != r.lsn || !bytes.Equal(a.rec, r.rec)) {
			t.Fatalf("record g%d:%d: acknowledged as LSN %d, replayed as LSN %d (or with other bytes)", g, seq, a.lsn, r.lsn)
		}
	}
	for k, a := range want {
		if _, ok := byKey[k]; !ok {
			t.Fatalf("acknowledged record g%d:%d (LSN %d) lost; recovered %d records, torn %+v", k[0], k[1], a.lsn, len(got), rep.Torn)
		}
	}

	// The recovered log accepts appends and survives a clean reopen.
	for i := 0; i < 10; i++ {
		if _, err := l2.Append(crashRecord(99, i, rng)); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, l2)
	l3, rep3 := mustOpen(t, Options{FS: crashed.Crash(vfs.DropUnsynced, nil), Dir: "/log"})
	defer mustClose(t, l3)
	if rep3.Torn != nil || rep3.NextLSN != rep.NextLSN+10 {
		t.Fatalf("after recovery and 10 appends: %+v torn %+v", rep3, rep3.Torn)
	}
	if n := len(replayAll(t, l3, rep.FirstLSN)); n != len(got)+10 {
		t.Fatalf("second replay %d records, want %d", n, len(got)+10)
	}
}

// TestCrashNeverInventsUnderLazyPolicies: under SyncInterval and SyncNone
// a crash may lose acknowledged records, but what survives is a dense
// prefix of what was appended, and everything before an explicit Sync
// survives.
func TestCrashNeverInventsUnderLazyPolicies(t *testing.T) {
	for _, pol := range []SyncPolicy{SyncInterval, SyncNone} {
		for seed := int64(0); seed < 6; seed++ {
			t.Run(fmt.Sprintf("%v/%d", pol, seed), func(t *testing.T) {
				rng := rand.New(rand.NewSource(seed))
				fs := vfs.NewMemFS()
				opts := Options{FS: fs, Dir: "/log", Sync: pol, SegmentSize: 4096, SyncInterval: time.Millisecond}
				l, _ := mustOpen(t, opts)
				var recs [][]byte
				synced := 0
				for i := 0; i < 400; i++ {
					rec := crashRecord(0, i, rng)
					recs = append(recs, rec)
					if _, err := l.Append(rec); err != nil {
						t.Fatal(err)
					}
					if i == 200 {
						if err := l.Sync(); err != nil {
							t.Fatal(err)
						}
						synced = i + 1
					}
				}
				mode := vfs.CrashMode(rng.Intn(3))
				opts.FS = fs.Crash(mode, rng)
				l.Close()
				l2, _ := mustOpen(t, opts)
				defer mustClose(t, l2)
				got := replayAll(t, l2, 0)
				if len(got) < synced {
					t.Fatalf("%v: %d records survived, but %d were synced", mode, len(got), synced)
				}
				for i, r := range got {
					if !bytes.Equal(r.rec, recs[i]) {
						t.Fatalf("record %d differs from what was appended", i)
					}
				}
			})
		}
	}
}
