package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"time"

	"github.com/memrl/memrl/qtable"
)

// The crash tests' oracle: a model of what the database must hold, kept
// beside a workload, and a checker that compares a recovered database with
// it.
//
// The model is updated only for acknowledged operations. The one operation
// in flight when the (simulated) power went out gives a second model, the
// acknowledged one with that operation applied; after recovery every
// collection and every memory must match one of the two. Rewards of several
// memories log one record per memory, so a crash may keep some of them:
// that is why memories are checked one by one rather than as a whole.

// mMem is the model of one memory.
type mMem struct {
	vec     []float32 // as stored (the tests use L2, so not normalised)
	payload []byte
	q       float64
	visits  uint64
	attrs   string    // compact JSON, or ""
	key     string    // or ""
	expires time.Time // zero for never (the workload's clock, crashNow, stands still)
	// hist is the memory's rewards since its add, newest last, at most
	// DefaultHistoryLen (history.go). Shared by clones: append to a clip.
	hist []mHist
}

// mHist is the model of one history entry (the time is crashNow's).
type mHist struct {
	reward, q float64
	visits    uint64
}

// mColl is the model of one collection.
type mColl struct {
	cfg  Config
	mems map[uint64]mMem
}

// model maps collection names to their model.
type model map[string]*mColl

func (m model) clone() model {
	out := make(model, len(m))
	for name, c := range m {
		nc := &mColl{cfg: c.cfg, mems: make(map[uint64]mMem, len(c.mems))}
		for id, mm := range c.mems {
			nc.mems[id] = mm
		}
		out[name] = nc
	}
	return out
}

// opKind is one kind of workload operation.
type opKind int

const (
	opCreate opKind = iota
	opDrop
	opAdd
	opReward
	opDelete
	opCheckpoint
	opSetAttrs   // attrs (empty removes them)
	opSetPayload // payload
	opExpire     // ttl seconds; 0 removes the expiry (Persist)
	opReplace    // vec, and attrs and payload as repl says (replace.go)
	// There is no explicit retrain operation: collections are IVF-PQ
	// (4-bit PQ) with a training threshold of 20 memories, so the background build
	// (and a retrain each time a collection grows fourfold) runs in the
	// middle of the workload, concurrently with its adds and checkpoints.
)

// op is one workload operation.
type op struct {
	kind    opKind
	coll    string
	id      uint64
	ids     []uint64
	vec     []float32
	payload []byte
	q       float64 // initial Q of an add, or the reward
	attrs   string  // of an add or opSetAttrs
	key     string  // of an add
	ttl     int     // seconds: of an add (0: none) or opExpire (0: persist)
	repl    byte    // opReplace: replaceAttrs and/or replacePayload
}

func (o op) String() string {
	return fmt.Sprintf("%v coll=%s id=%d ids=%v q=%v attrs=%s key=%q ttl=%d",
		[...]string{"create", "drop", "add", "reward", "delete", "checkpoint", "setattrs", "setpayload", "expire", "replace"}[o.kind],
		o.coll, o.id, o.ids, o.q, o.attrs, o.key, o.ttl)
}

var crashCfg = Config{Dim: 4, Metric: L2, Alpha: 0.5, Gamma: 0, QInit: 0,
	Index: IndexConfig{Kind: IndexIVFPQ, TrainThreshold: 20, PQBits: 4}}

// apply changes m as op does when it succeeds.
func (m model) apply(o op) {
	switch o.kind {
	case opCreate:
		m[o.coll] = &mColl{cfg: crashCfg, mems: map[uint64]mMem{}}
	case opDrop:
		delete(m, o.coll)
	case opAdd:
		mm := mMem{vec: o.vec, payload: o.payload, q: o.q, attrs: o.attrs, key: o.key}
		if o.ttl > 0 {
			mm.expires = crashNow().Add(time.Duration(o.ttl) * time.Second)
		}
		m[o.coll].mems[o.id] = mm
	case opSetAttrs, opSetPayload, opExpire, opReplace:
		mm := m[o.coll].mems[o.id]
		switch o.kind {
		case opReplace: // Q, visits, history, key and expiry stay
			mm.vec = o.vec
			if o.repl&replaceAttrs != 0 {
				mm.attrs = o.attrs
			}
			if o.repl&replacePayload != 0 {
				mm.payload = o.payload
			}
		case opSetAttrs:
			mm.attrs = o.attrs
		case opSetPayload:
			mm.payload = o.payload
		default:
			mm.expires = time.Time{}
			if o.ttl > 0 {
				mm.expires = crashNow().Add(time.Duration(o.ttl) * time.Second)
			}
		}
		m[o.coll].mems[o.id] = mm
	case opReward:
		c := m[o.coll]
		for _, id := range o.ids {
			mm := c.mems[id]
			mm.q = qtable.TD(mm.q, o.q, c.cfg.Alpha, c.cfg.Gamma, 0)
			mm.visits++
			mm.hist = append(slices.Clip(mm.hist), mHist{reward: o.q, q: mm.q, visits: mm.visits})
			if len(mm.hist) > DefaultHistoryLen {
				mm.hist = mm.hist[1:]
			}
			c.mems[id] = mm
		}
	case opDelete:
		for _, id := range o.ids {
			delete(m[o.coll].mems, id)
		}
	}
}

// execOp runs op on db.
func execOp(db *DB, o op) error {
	switch o.kind {
	case opCreate:
		return db.Create(o.coll, crashCfg)
	case opDrop:
		return db.Drop(o.coll)
	case opCheckpoint:
		return db.Checkpoint()
	}
	c, err := db.Collection(o.coll)
	if err != nil {
		return err
	}
	switch o.kind {
	case opAdd:
		_, err = c.Add(AddRequest{Vector: o.vec, Payload: o.payload, ID: o.id, HasID: true, Q: o.q, HasQ: true,
			Attrs: []byte(o.attrs), Key: o.key, TTL: time.Duration(o.ttl) * time.Second})
	case opSetAttrs:
		err = c.SetAttrs(ByID(o.id), []byte(o.attrs))
	case opSetPayload:
		err = c.SetPayload(ByID(o.id), o.payload)
	case opReplace:
		_, err = c.Replace(ByID(o.id), ReplaceRequest{Vector: o.vec, Attrs: []byte(o.attrs), SetAttrs: o.repl&replaceAttrs != 0,
			Payload: o.payload, SetPayload: o.repl&replacePayload != 0})
	case opExpire:
		var t Ticket
		if o.ttl > 0 {
			t, err = c.ExpireDeferred(ByID(o.id), time.Duration(o.ttl)*time.Second)
		} else {
			_, t, err = c.PersistDeferred(ByID(o.id))
		}
		if err == nil {
			err = db.WaitDurable(t)
		}
	case opReward:
		_, err = c.Reward(o.q, o.ids, nil)
	case opDelete:
		_, err = c.Delete(o.ids)
	}
	return err
}

// gen picks the next operation of a workload from the acknowledged model,
// so that the same rng gives the same operations whatever the crash point.
type gen struct {
	rng     *rand.Rand
	nextID  uint64
	nextCol int
	deleted map[string][]uint64 // ids deleted, for re-adds of the same id
}

func newGen(seed int64) *gen {
	return &gen{rng: rand.New(rand.NewSource(seed)), nextID: 1, deleted: map[string][]uint64{}}
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (g *gen) next(m model) op {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	r := g.rng.Intn(100)
	switch {
	case len(names) == 0 || r < 3 && len(names) < 3:
		g.nextCol++
		return op{kind: opCreate, coll: fmt.Sprintf("c%d", g.nextCol)}
	case r < 5 && len(names) > 1:
		return op{kind: opDrop, coll: names[g.rng.Intn(len(names))]}
	case r < 9:
		return op{kind: opCheckpoint}
	}
	name := names[g.rng.Intn(len(names))]
	ids := sortedKeys(m[name].mems)
	switch {
	case r < 45 || len(ids) == 0:
		id := g.nextID
		if d := g.deleted[name]; len(d) > 0 && g.rng.Intn(4) == 0 {
			id, g.deleted[name] = d[0], d[1:] // re-add a deleted id
		} else {
			g.nextID++
		}
		vec := []float32{float32(id), g.rng.Float32(), g.rng.Float32(), 1}
		payload := []byte(fmt.Sprintf("payload of %d in %s: %d", id, name, g.rng.Intn(1000)))
		o := op{kind: opAdd, coll: name, id: id, vec: vec, payload: payload, q: float64(g.rng.Intn(5))}
		switch g.rng.Intn(4) {
		case 0:
			o.key = fmt.Sprintf("key-%d", id) // unique: ids are unique in a collection
		case 1:
			o.key = fmt.Sprintf("key-%d", id)
			o.attrs = fmt.Sprintf(`{"user":"u%d","step":%d}`, g.rng.Intn(5), g.rng.Intn(10))
			o.ttl = 1 + g.rng.Intn(1000)
		case 2:
			o.attrs = `{"tags":["plan"]}`
		}
		return o
	case r < 70:
		n := 1 + g.rng.Intn(min(3, len(ids)))
		perm := g.rng.Perm(len(ids))[:n]
		o := op{kind: opReward, coll: name, q: float64(g.rng.Intn(11) - 5)}
		for _, i := range perm {
			o.ids = append(o.ids, ids[i])
		}
		return o
	case r < 78:
		o := op{kind: opSetAttrs, coll: name, id: ids[g.rng.Intn(len(ids))]}
		if g.rng.Intn(4) > 0 {
			o.attrs = fmt.Sprintf(`{"status":"s%d"}`, g.rng.Intn(100))
		}
		return o
	case r < 81:
		id := ids[g.rng.Intn(len(ids))]
		return op{kind: opSetPayload, coll: name, id: id, payload: []byte(fmt.Sprintf("new payload of %d: %d", id, g.rng.Intn(1000)))}
	case r < 84:
		id := ids[g.rng.Intn(len(ids))]
		o := op{kind: opReplace, coll: name, id: id, vec: []float32{float32(id), g.rng.Float32(), g.rng.Float32(), 2},
			repl: byte(g.rng.Intn(4))}
		if o.repl&replaceAttrs != 0 && g.rng.Intn(3) > 0 {
			o.attrs = fmt.Sprintf(`{"status":"r%d"}`, g.rng.Intn(100))
		}
		if o.repl&replacePayload != 0 {
			o.payload = []byte(fmt.Sprintf("replaced payload of %d: %d", id, g.rng.Intn(1000)))
		}
		return o
	case r < 90:
		o := op{kind: opExpire, coll: name, id: ids[g.rng.Intn(len(ids))]}
		if g.rng.Intn(3) > 0 {
			o.ttl = 1 + g.rng.Intn(1000)
		}
		return o
	default:
		n := 1 + g.rng.Intn(min(2, len(ids)))
		o := op{kind: opDelete, coll: name}
		for _, i := range g.rng.Perm(len(ids))[:n] {
			o.ids = append(o.ids, ids[i])
			g.deleted[name] = append(g.deleted[name], ids[i])
		}
		return o
	}
}

// checkMem compares a recovered memory (got, or absent) with a model's.
func checkMem(got MemoryInfo, present bool, want mMem, wantPresent bool) bool {
	if present != wantPresent {
		return false
	}
	if !present {
		return true
	}
	if got.Q != want.q || got.Visits != want.visits || !bytes.Equal(got.Payload, want.payload) || len(got.Vector) != len(want.vec) {
		return false
	}
	if string(got.Attrs) != want.attrs || got.Key != want.key || !got.Expires.Equal(want.expires) {
		return false
	}
	for i := range got.Vector {
		if got.Vector[i] != want.vec[i] {
			return false
		}
	}
	return true
}

// checkHist reports whether the history of memory id of c is want's.
func checkHist(c *Collection, id uint64, present bool, want mMem) bool {
	if !present {
		return true
	}
	h, err := c.History(ByID(id), 0)
	if err != nil || len(h) != len(want.hist) {
		return false
	}
	for i, e := range h {
		w := want.hist[len(want.hist)-1-i]
		if e.Reward != w.reward || e.Q != w.q || e.Visits != w.visits || e.Time.UnixMilli() != crashNow().UnixMilli() {
			return false
		}
	}
	return true
}

// checkRecovered checks db against the acknowledged model acked and, if an
// operation was in flight, the model with it applied (inflight, else nil).
// Every collection and every memory must match one of the two; nothing
// else may exist.
func checkRecovered(db *DB, acked, inflight model) error {
	cands := []model{acked}
	if inflight != nil {
		cands = append(cands, inflight)
	}
	for _, name := range db.List() {
		if acked[name] == nil && (inflight == nil || inflight[name] == nil) {
			return fmt.Errorf("collection %q exists but was never acknowledged nor in flight", name)
		}
	}
	names := map[string]bool{}
	for _, m := range cands {
		for n := range m {
			names[n] = true
		}
	}
	for name := range names {
		c, err := db.Collection(name)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNoCollection) {
			return err
		}
		ok := false
		for _, m := range cands {
			ok = ok || (m[name] != nil) == exists
		}
		if !ok {
			return fmt.Errorf("collection %q: exists=%v matches neither the acknowledged nor the in-flight state", name, exists)
		}
		if !exists {
			continue
		}
		ids := map[uint64]bool{}
		for _, m := range cands {
			if mc := m[name]; mc != nil {
				for id := range mc.mems {
					ids[id] = true
				}
			}
		}
		found := 0
		for id := range ids {
			got, err := c.Get(id)
			present := err == nil
			if err != nil && !errors.Is(err, ErrNoMemory) {
				return fmt.Errorf("collection %q: Get(%d): %v", name, id, err)
			}
			if present {
				found++
			}
			ok := false
			for _, m := range cands {
				if mc := m[name]; mc != nil {
					want, wantPresent := mc.mems[id]
					ok = ok || checkMem(got, present, want, wantPresent) && checkHist(c, id, present, want)
				}
			}
			if !ok {
				var wa, wi any
				if mc := acked[name]; mc != nil {
					wa = mc.mems[id]
				}
				if inflight != nil && inflight[name] != nil {
					wi = inflight[name].mems[id]
				}
				h, _ := c.History(ByID(id), 0)
				return fmt.Errorf("collection %q memory %d: present=%v Q=%v visits=%d payload=%q attrs=%s key=%q expires=%v history=%v; acknowledged %+v, in flight %+v",
					name, id, present, got.Q, got.Visits, got.Payload, got.Attrs, got.Key, got.Expires, h, wa, wi)
			}
			// The key index agrees with the memories.
			if present && got.Key != "" {
				if byKey, err := c.GetRef(ByKey(got.Key)); err != nil || byKey.ID != id {
					return fmt.Errorf("collection %q memory %d: its key %q finds %d, %v", name, id, got.Key, byKey.ID, err)
				}
			}
		}
		in, err := c.Info()
		if err != nil {
			return err
		}
		if in.Count != found {
			return fmt.Errorf("collection %q holds %d memories, the models know %d of them", name, in.Count, found)
		}
	}
	return nil
}
