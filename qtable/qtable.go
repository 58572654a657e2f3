package qtable

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
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

// A table starts with 1<<minBits stripes and grows, by growBits bits at a
// time up to 1<<maxBits, when one of its stripes holds more than splitAt
// entries: a small collection's table costs about a KiB instead of the
// 68 KiB that 256 stripes cost however empty (issue 26: thousands of small
// collections), and a table of more than a few thousand entries has all
// 256 stripes, which keep the chance that two of 64 concurrent writers on
// distinct ids share a stripe small. The price: a small table's stripes
// hold up to splitAt entries, so its look-ups hash where a map of at most
// 8 would scan (BenchmarkUpdateParallelSmall, one goroutine: 52–60 ns
// against 35–39 on a machine at load 6; a reward costs about 1 µs).
//
// An id's stripe is the top bits of a multiplicative hash, so growing
// splits each stripe into stripes of the same hash range: the logical
// stripe of TakeDirty (the top maxBits bits) always lies within one
// physical stripe.
const (
	maxBits    = 8
	minBits    = 2
	growBits   = 2
	splitAt    = 64
	numStripes = 1 << maxBits
)

// hash spreads sequential ids over all stripes (Fibonacci hashing).
func hash(id uint64) uint64 { return id * 0x9E3779B97F4A7C15 }

// stripe holds the entries of the ids that hash to it. Entries live in a
// dense slice and the map holds only their positions: an update is one map
// look-up and an in-place write, and neither the map nor the slice holds a
// pointer, so the garbage collector never scans a million entries.
type stripe struct {
	mu sync.Mutex
	// moved: the table grew and this stripe's entries are in the new
	// stripes; whoever locks a moved stripe must look the stripe up again.
	// Guarded by mu.
	moved bool
	pos   map[uint64]uint32 // id -> index in ents and ids; nil until the first entry; guarded by mu
	// INVARIANT: len(ents) == len(ids) == len(dirty) == len(pos), and
	// pos[ids[i]] == i.
	ents  []Entry  // guarded by mu
	ids   []uint64 // guarded by mu
	dirty []bool   // dirty[i]: ents[i] changed since it was last taken; guarded by mu
	// INVARIANT: every i with dirty[i] has ids[i] in changed (changed may
	// also hold ids since deleted or already taken; TakeDirty skips them).
	changed []uint64 // guarded by mu
	// qs are running sums of the entries' Q for Stats; guarded by mu.
	qs qSums
	_  [64]byte // pads a stripe: no false sharing between stripes
}

// stripeSet is a table's stripes: 1<<bits of them. It never changes once
// published; growing publishes a new one.
type stripeSet struct {
	bits    uint
	stripes []stripe
}

func newStripeSet(bits uint) *stripeSet {
	return &stripeSet{bits: bits, stripes: make([]stripe, 1<<bits)}
}

// of returns the stripe of hash h.
func (ss *stripeSet) of(h uint64) *stripe { return &ss.stripes[h>>(64-ss.bits)] }

// full reports whether s, a stripe of ss, has outgrown it.
// REQUIRES: s.mu held.
func (ss *stripeSet) full(s *stripe) bool { return len(s.ents) > splitAt && ss.bits < maxBits }

// qSums are running sums of the Q of a stripe's entries, shifted by a
// reference value (the Q of the entry that made the stripe non-empty) so
// that the variance does not suffer from cancellation when the Q values
// are large and close together: d1 = Σ(Q-ref), d2 = Σ(Q-ref)². They are
// reset when the stripe empties, so rounding errors do not outlive the
// entries that caused them.
type qSums struct {
	ref, d1, d2 float64
}

// add counts q in (sign +1) or out (sign -1) of the sums of a stripe that
// holds n entries after the change.
func (q *qSums) add(v float64, sign float64, n int) {
	if n == 0 {
		*q = qSums{}
		return
	}
	if sign > 0 && n == 1 {
		*q = qSums{ref: v}
		return
	}
	d := v - q.ref
	q.d1 += sign * d
	q.d2 += sign * d * d
}

// putLocked inserts or replaces id's entry, marking it dirty if mark.
// REQUIRES: s.mu held.
func (s *stripe) putLocked(id uint64, e Entry, mark bool) {
	i, ok := s.pos[id]
	if !ok {
		if s.pos == nil {
			s.pos = make(map[uint64]uint32)
		}
		i = uint32(len(s.ents))
		s.pos[id] = i
		s.ents = append(s.ents, e)
		s.ids = append(s.ids, id)
		s.dirty = append(s.dirty, false)
	} else {
		s.qs.add(s.ents[i].Q, -1, len(s.ents)-1)
	}
	s.qs.add(e.Q, +1, len(s.ents))
	s.ents[i] = e
	if mark {
		s.markLocked(i)
	}
}

// markLocked marks entry i dirty. REQUIRES: s.mu held.
func (s *stripe) markLocked(i uint32) {
	if !s.dirty[i] {
		s.dirty[i] = true
		s.changed = append(s.changed, s.ids[i])
	}
}

// deleteLocked removes id, moving the last entry into its place.
// REQUIRES: s.mu held.
func (s *stripe) deleteLocked(id uint64) bool {
	i, ok := s.pos[id]
	if !ok {
		return false
	}
	last := uint32(len(s.ents) - 1)
	s.qs.add(s.ents[i].Q, -1, int(last))
	if i != last {
		s.ents[i], s.ids[i], s.dirty[i] = s.ents[last], s.ids[last], s.dirty[last]
		s.pos[s.ids[i]] = i
	}
	s.ents, s.ids, s.dirty = s.ents[:last], s.ids[:last], s.dirty[:last]
	delete(s.pos, id)
	return true
}

// Table is a lock-striped map from memory id to Entry. The zero value is not
// usable; call New.
type Table struct {
	// set is the stripes in use. Growing replaces it while holding every
	// stripe of the old set, and marks them moved.
	set atomic.Pointer[stripeSet]
	// growMu serialises growths. Lock order: growMu before any stripe.
	growMu sync.Mutex
}

// New returns an empty table.
func New() *Table {
	t := &Table{}
	t.set.Store(newStripeSet(minBits))
	return t
}

// StripeBytes returns the memory the table's stripes hold besides their
// entries: a few hundred bytes each, a KiB for a new table, 50 KiB once
// it has all NumStripes. It grows only when an entry is put or loaded.
func (t *Table) StripeBytes() int64 {
	return int64(unsafe.Sizeof(Table{})) + int64(len(t.set.Load().stripes))*int64(unsafe.Sizeof(stripe{}))
}

// lock returns the stripe of id locked, and the set it belongs to.
func (t *Table) lock(id uint64) (*stripe, *stripeSet) {
	h := hash(id)
	for {
		ss := t.set.Load()
		s := ss.of(h)
		s.mu.Lock()
		if !s.moved {
			return s, ss
		}
		s.mu.Unlock() // the table grew meanwhile: look again
	}
}

// grow replaces ss, if it is still the table's set, by one with growBits
// more bits, moving every entry with its dirty mark. It holds every stripe
// of ss meanwhile, so no change is lost; it moves at most a few thousand
// entries, as a set grows as soon as one stripe exceeds splitAt.
// REQUIRES: no stripe lock held.
func (t *Table) grow(ss *stripeSet) {
	t.growMu.Lock()
	defer t.growMu.Unlock()
	if t.set.Load() != ss {
		return // another grew it
	}
	for i := range ss.stripes {
		ss.stripes[i].mu.Lock()
	}
	nss := newStripeSet(min(ss.bits+growBits, maxBits))
	for i := range ss.stripes {
		s := &ss.stripes[i]
		for j, id := range s.ids {
			// nss is not yet published: its stripes need no lock.
			nss.of(hash(id)).putLocked(id, s.ents[j], s.dirty[j])
		}
		s.moved = true
		s.pos, s.ents, s.ids, s.dirty, s.changed = nil, nil, nil, nil, nil
	}
	t.set.Store(nss)
	for i := range ss.stripes {
		ss.stripes[i].mu.Unlock()
	}
}

// Get returns the entry of id.
func (t *Table) Get(id uint64) (Entry, bool) {
	s, _ := t.lock(id)
	defer s.mu.Unlock()
	if i, ok := s.pos[id]; ok {
		return s.ents[i], true
	}
	return Entry{}, false
}

// Put sets the entry of id, inserting it if absent, and marks it dirty.
func (t *Table) Put(id uint64, e Entry) { t.put(id, e, true) }

// Load sets the entry of id like Put but leaves it clean: for state read
// back from a checkpoint, which need not be written again.
func (t *Table) Load(id uint64, e Entry) { t.put(id, e, false) }

func (t *Table) put(id uint64, e Entry, mark bool) {
	s, ss := t.lock(id)
	s.putLocked(id, e, mark)
	full := ss.full(s)
	s.mu.Unlock()
	if full {
		t.grow(ss)
	}
}

// Delete removes id; it reports whether id was present.
func (t *Table) Delete(id uint64) bool {
	s, _ := t.lock(id)
	ok := s.deleteLocked(id)
	s.mu.Unlock()
	return ok
}

// Update applies fn to the entry of id atomically: no other Update, Put or
// Delete of an id in the same stripe runs between reading and writing it,
// and marks it dirty. If fn returns an error the entry is left unchanged
// (and its dirty mark too) and the error is returned.
// fn must be quick and must not call back into the table (the stripe lock is
// held); it may enqueue a log record.
func (t *Table) Update(id uint64, fn func(e *Entry) error) (Entry, error) {
	s, _ := t.lock(id)
	defer s.mu.Unlock()
	i, ok := s.pos[id]
	if !ok {
		return Entry{}, ErrNotFound
	}
	// fn gets the entry in place (a pointer to a local copy would make the
	// copy escape to the heap on every update); a failed fn is undone.
	p := &s.ents[i]
	old := *p
	if err := fn(p); err != nil {
		*p = old
		return Entry{}, err
	}
	if p.Q != old.Q {
		n := len(s.ents)
		s.qs.add(old.Q, -1, n-1)
		s.qs.add(p.Q, +1, n)
	}
	s.markLocked(i)
	return *p, nil
}

// NumStripes is the number of logical stripes, for TakeDirty: the most
// stripes a table has.
const NumStripes = numStripes

// TakeDirty appends to dst every dirty entry of logical stripe i (0 <= i
// < NumStripes), clears their marks and returns dst. Reading an entry and
// clearing its mark happen under the stripe's lock, so a change made
// afterwards marks it again: taking every i in turn yields each entry
// changed since the previous take at least as new as it was at the take,
// and each id at most once. While a table has fewer stripes than
// NumStripes, a stripe holds several logical stripes and a take scans
// its list of marked ids for those of i; as a stripe that small holds at
// most splitAt entries, a pass over all i costs a few thousand hashes.
func (t *Table) TakeDirty(i int, dst []IDEntry) []IDEntry {
	s, shift := t.lockLogical(i)
	defer s.mu.Unlock()
	// INVARIANT kept: the ids of other logical stripes stay in changed.
	keep := s.changed[:0]
	for _, id := range s.changed {
		if shift > 0 && int(hash(id)>>(64-maxBits)) != i {
			keep = append(keep, id)
			continue
		}
		if j, ok := s.pos[id]; ok && s.dirty[j] {
			s.dirty[j] = false
			dst = append(dst, IDEntry{ID: id, Entry: s.ents[j]})
		}
	}
	s.changed = keep
	return dst
}

// lockLogical returns locked the stripe holding logical stripe i, and the
// number of bits of i that its set ignores.
func (t *Table) lockLogical(i int) (*stripe, uint) {
	for {
		ss := t.set.Load()
		shift := maxBits - ss.bits
		s := &ss.stripes[i>>shift]
		s.mu.Lock()
		if !s.moved {
			return s, shift
		}
		s.mu.Unlock()
	}
}

// eachStripe calls fn with each stripe locked in turn, in hash order,
// until fn returns false. A growth meanwhile does not make it visit an
// entry twice or miss one: it goes on from the first logical stripe it
// has not visited, in the new set.
func (t *Table) eachStripe(fn func(s *stripe) bool) {
	for l := 0; l < numStripes; {
		ss := t.set.Load()
		shift := maxBits - ss.bits
		s := &ss.stripes[l>>shift]
		s.mu.Lock()
		if s.moved {
			s.mu.Unlock()
			continue
		}
		ok := fn(s)
		s.mu.Unlock()
		if !ok {
			return
		}
		// INVARIANT: l is a multiple of 1<<shift; shifts only shrink.
		l = (l>>shift + 1) << shift
	}
}

// IDEntry is an entry with its id.
type IDEntry struct {
	ID uint64
	Entry
}

// Len returns the number of entries. It locks each stripe in turn, so under
// concurrent inserts the result is only approximate.
func (t *Table) Len() int {
	n := 0
	t.eachStripe(func(s *stripe) bool {
		n += len(s.ents)
		return true
	})
	return n
}

// Range calls fn for every entry, one stripe at a time with that stripe
// locked; fn must not call back into the table. Iteration stops when fn
// returns false. Entries changed concurrently in stripes not yet visited are
// seen with their new values.
func (t *Table) Range(fn func(id uint64, e Entry) bool) {
	t.eachStripe(func(s *stripe) bool {
		for j, e := range s.ents {
			if !fn(s.ids[j], e) {
				return false
			}
		}
		return true
	})
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

// QStats summarise the Q values of a table.
type QStats struct {
	N    int     // entries
	Mean float64 // mean Q; 0 when N is 0
	Std  float64 // population standard deviation of Q; 0 when N < 2
}

// QStats returns the count, mean and standard deviation of the entries'
// Q. It costs a lock of each stripe in turn and a few operations per
// stripe, not per entry: every stripe keeps running sums, updated by Put,
// Load, Update and Delete. Under concurrent changes the result mixes
// stripes read at slightly different times. The sums accumulate rounding
// error with each change (relative to the spread of Q within a stripe);
// a stripe's sums restart from zero whenever it empties.
func (t *Table) QStats() QStats {
	type part struct {
		n           int
		ref, d1, d2 float64
	}
	var buf [numStripes]part
	parts := buf[:0]
	total, sum := 0, 0.0
	t.eachStripe(func(s *stripe) bool {
		p := part{n: len(s.ents), ref: s.qs.ref, d1: s.qs.d1, d2: s.qs.d2}
		parts = append(parts, p)
		total += p.n
		sum += float64(p.n)*p.ref + p.d1
		return true
	})
	if total == 0 {
		return QStats{}
	}
	mean := sum / float64(total)
	// Σ(Q-mean)² over a stripe = d2 + 2(ref-mean)·d1 + n(ref-mean)².
	var ss float64
	for _, p := range parts {
		if p.n == 0 {
			continue
		}
		k := p.ref - mean
		ss += p.d2 + 2*k*p.d1 + float64(p.n)*k*k
	}
	return QStats{N: total, Mean: mean, Std: math.Sqrt(max(ss/float64(total), 0))}
}
