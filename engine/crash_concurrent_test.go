package engine

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/qtable"
	"github.com/memrl/memrl/vfs"
)

// TestCrashConcurrentCheckpoints crashes a concurrent workload: writers add
// (some with a key, attributes and a TTL), reward, update attributes,
// payloads and expiry, delete and re-add their own memories of one collection while
// checkpoints run back to back, copying the collection two rows at a time
// (so copies interleave with every kind of change, including a delete and
// re-add of one id at a new row). The power goes out at a random file
// operation; after recovery each memory must hold its last acknowledged
// state or the state of its owner's one in-flight operation.
func TestCrashConcurrentCheckpoints(t *testing.T) {
	defer func(n uint32) { snapshotChunk = n }(snapshotChunk)
	snapshotChunk = 2
	runs := 40
	if crashLong() {
		runs = 300
	}
	base := time.Now().UnixNano()
	for i := 0; i < runs; i++ {
		seed := base + int64(i)
		if !crashConcurrentOnce(t, seed) {
			t.Fatalf("replay: seed %d (crashConcurrentOnce)", seed)
		}
	}
}

// owned is what one writer knows of its memories.
type owned struct {
	acked    map[uint64]mMem // present memories, acknowledged state
	inflight map[uint64]*mMem
	// inflight holds the state each memory touched by the in-flight
	// operation would have (nil value: deleted); empty when none.
}

func crashConcurrentOnce(t *testing.T, seed int64) bool {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	const writers, opsPerWriter = 4, 60
	fs := vfs.NewMemFS()
	db, err := Open("/db", crashOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Create("shared", crashCfg); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("shared")
	// Each writer operation makes 2-4 file operations, a checkpoint a few
	// dozen: crash anywhere in the run.
	fs.PowerOffAt(1 + rng.Int63n(writers*opsPerWriter*5))

	state := make([]*owned, writers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var ckpts int
	ckptDone := make(chan struct{})
	go func() { // checkpoints back to back until the disk is gone
		defer close(ckptDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if db.Checkpoint() != nil {
				return
			}
			ckpts++
			time.Sleep(time.Duration(rng.Intn(500)) * time.Microsecond)
		}
	}()
	for w := 0; w < writers; w++ {
		st := &owned{acked: map[uint64]mMem{}, inflight: map[uint64]*mMem{}}
		state[w] = st
		wg.Add(1)
		go func(w int, rng *rand.Rand) {
			defer wg.Done()
			var deleted []uint64
			next := uint64(w)<<32 | 1
			for i := 0; i < opsPerWriter; i++ {
				ids := sortedKeys(st.acked)
				r := rng.Intn(100)
				var err error
				switch {
				case r < 35 || len(ids) == 0:
					id := next
					if len(deleted) > 0 && rng.Intn(2) == 0 {
						id, deleted = deleted[0], deleted[1:]
					} else {
						next++
					}
					m := mMem{vec: []float32{float32(id), float32(i), 1, 2}, payload: []byte(fmt.Sprint(id, i)), q: float64(rng.Intn(3))}
					var ttl time.Duration
					if rng.Intn(2) == 0 {
						m.key, m.attrs = fmt.Sprintf("key-%d", id), fmt.Sprintf(`{"i":%d}`, i)
						ttl = time.Duration(1+rng.Intn(100)) * time.Second
						m.expires = crashNow().Add(ttl)
					}
					st.inflight[id] = &m
					_, err = c.Add(AddRequest{Vector: m.vec, Payload: m.payload, ID: id, HasID: true, Q: m.q, HasQ: true,
						Key: m.key, Attrs: []byte(m.attrs), TTL: ttl})
				case r < 70:
					id := ids[rng.Intn(len(ids))]
					rw := float64(rng.Intn(7) - 3)
					m := st.acked[id]
					m.q = qtable.TD(m.q, rw, crashCfg.Alpha, 0, 0)
					m.visits++
					st.inflight[id] = &m
					_, err = c.Reward(rw, []uint64{id}, nil)
				case r < 85:
					id := ids[rng.Intn(len(ids))]
					m := st.acked[id]
					switch r % 3 {
					case 0:
						m.attrs = fmt.Sprintf(`{"set":%d}`, i)
						st.inflight[id] = &m
						err = c.SetAttrs(ByID(id), []byte(m.attrs))
					case 1:
						m.payload = []byte(fmt.Sprint("new ", id, i))
						st.inflight[id] = &m
						err = c.SetPayload(ByID(id), m.payload)
					default:
						m.expires = crashNow().Add(time.Duration(i+1) * time.Second)
						st.inflight[id] = &m
						var tk Ticket
						if tk, err = c.ExpireDeferred(ByID(id), time.Duration(i+1)*time.Second); err == nil {
							err = db.WaitDurable(tk)
						}
					}
				default:
					id := ids[rng.Intn(len(ids))]
					st.inflight[id] = nil
					deleted = append(deleted, id)
					_, err = c.Delete([]uint64{id})
				}
				if err != nil {
					return // the in-flight operation stays recorded
				}
				for id, m := range st.inflight {
					if m == nil {
						delete(st.acked, id)
					} else {
						st.acked[id] = *m
					}
					delete(st.inflight, id)
				}
			}
		}(w, rand.New(rand.NewSource(seed+int64(w)+1)))
	}
	wg.Wait()
	close(stop)
	<-ckptDone
	db.Close()
	mode := vfs.CrashMode(rng.Intn(3))
	what := fmt.Sprintf("seed %d, %v, power off at op %d (%d checkpoints done)", seed, mode, fs.MutatingOps(), ckpts)
	db2, err := Open("/db", crashOpts(fs.Crash(mode, rng)))
	if err != nil {
		t.Errorf("%s: recovery: %v", what, err)
		return false
	}
	defer db2.Close()
	c2, err := db2.Collection("shared")
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return false
	}
	found := 0
	for w, st := range state {
		ids := map[uint64]bool{}
		for id := range st.acked {
			ids[id] = true
		}
		for id := range st.inflight {
			ids[id] = true
		}
		for id := range ids {
			got, err := c2.Get(id)
			present := err == nil
			if err != nil && !errors.Is(err, ErrNoMemory) {
				t.Errorf("%s: Get(%d): %v", what, id, err)
				return false
			}
			if present {
				found++
			}
			want, wantPresent := st.acked[id]
			ok := checkMem(got, present, want, wantPresent)
			if m, in := st.inflight[id]; in {
				if m == nil {
					ok = ok || !present
				} else {
					ok = ok || checkMem(got, present, *m, true)
				}
			}
			if !ok {
				t.Errorf("%s: writer %d memory %d: present=%v Q=%v visits=%d; acknowledged %v (present %v), in flight %v",
					what, w, id, present, got.Q, got.Visits, want, wantPresent, st.inflight[id])
				return false
			}
		}
	}
	in, _ := c2.Info()
	t.Logf("%s: %d memories recovered", what, found)
	if in.Count != found {
		t.Errorf("%s: %d memories recovered, the writers know %d", what, in.Count, found)
		return false
	}
	return true
}
