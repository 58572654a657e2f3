package qtable

import (
	"errors"
	"math"
	"sync"
)

// ErrNotFound is returned by Update when the id is not in the table.
var ErrNotFound = errors.New("qtable: id not found")

// Entry is the utility state of one memory.
type Entry struct {
	Q          float64 // learned utility
	Visits     uint64  // number of rewards applied
	LastReward float64 // the reward of the latest update; 0 before any
	RewardSum  float64 // sum of all rewards applied, for the mean reward
	Updated    int64   // unix nanoseconds of the latest change
}

// MeanReward returns RewardSum/Visits, or 0 when Visits is 0.
func (e Entry) MeanReward() float64 {
	if e.Visits == 0 {
		return 0
	}
	return e.RewardSum / float64(e.Visits)
}

// TD returns the temporal-difference update of q:
//
//	q + alpha*(reward + gamma*nextQ - q)
//
// With gamma = 0 (the common case) this is q + alpha*(reward - q).
func TD(q, reward, alpha, gamma, nextQ float64) float64 {
	return q + alpha*(reward+gamma*nextQ-q)
}

// numStripes is a power of two so the stripe is a mask of the hash. 256
// stripes keep the chance that two of 64 concurrent writers on distinct ids
// share a stripe small, at a cost of a few KiB per table.
const numStripes = 256

type stripe struct {
	mu sync.Mutex
	m  map[uint64]Entry // guarded by mu
	_  [40]byte         // keeps neighbouring stripes' mutexes off one cache line
}

// Table is a lock-striped map from memory id to Entry. The zero value is not
// usable; call New.
type Table struct {
	stripes [numStripes]stripe
}

// New returns an empty table.
func New() *Table {
	t := &Table{}
	for i := range t.stripes {
		t.stripes[i].m = make(map[uint64]Entry)
	}
	return t
}

// stripeOf picks the stripe of id with a multiplicative (Fibonacci) hash, so
// that sequential ids spread over all stripes.
func (t *Table) stripeOf(id uint64) *stripe {
	h := id * 0x9E3779B97F4A7C15
	return &t.stripes[h>>(64-8)]
}

// Get returns the entry of id.
func (t *Table) Get(id uint64) (Entry, bool) {
	s := t.stripeOf(id)
	s.mu.Lock()
	e, ok := s.m[id]
	s.mu.Unlock()
	return e, ok
}

// Put sets the entry of id, inserting it if absent.
func (t *Table) Put(id uint64, e Entry) {
	s := t.stripeOf(id)
	s.mu.Lock()
	s.m[id] = e
	s.mu.Unlock()
}

// Delete removes id; it reports whether id was present.
func (t *Table) Delete(id uint64) bool {
	s := t.stripeOf(id)
	s.mu.Lock()
	_, ok := s.m[id]
	delete(s.m, id)
	s.mu.Unlock()
	return ok
}

// Update applies fn to the entry of id atomically: no other Update, Put or
// Delete of an id in the same stripe runs between reading and writing it. If
// fn returns an error the entry is left unchanged and the error is returned.
// fn must be quick and must not call back into the table (the stripe lock is
// held); it may enqueue a log record.
func (t *Table) Update(id uint64, fn func(e *Entry) error) (Entry, error) {
	s := t.stripeOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	if !ok {
		return Entry{}, ErrNotFound
	}
	if err := fn(&e); err != nil {
		return Entry{}, err
	}
	s.m[id] = e
	return e, nil
}

// Len returns the number of entries. It locks each stripe in turn, so under
// concurrent inserts the result is only approximate.
func (t *Table) Len() int {
	n := 0
	for i := range t.stripes {
		s := &t.stripes[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// Range calls fn for every entry, one stripe at a time with that stripe
// locked; fn must not call back into the table. Iteration stops when fn
// returns false. Entries changed concurrently in stripes not yet visited are
// seen with their new values.
func (t *Table) Range(fn func(id uint64, e Entry) bool) {
	for i := range t.stripes {
		s := &t.stripes[i]
		s.mu.Lock()
		for id, e := range s.m {
			if !fn(id, e) {
				s.mu.Unlock()
				return
			}
		}
		s.mu.Unlock()
	}
}

// MaxQ returns the largest Q among ids, and false when none of them is in
// the table. It is the max over next memories in Q-learning's target.
func (t *Table) MaxQ(ids []uint64) (float64, bool) {
	best, found := math.Inf(-1), false
	for _, id := range ids {
		if e, ok := t.Get(id); ok && e.Q > best {
			best, found = e.Q, true
		}
	}
	return best, found
}
