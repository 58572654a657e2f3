package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/memrl/memrl/engine/filter"
)

// Prune policies: a collection may carry a prune (MEM.CONFIG coll SET
// PRUNE …) that the pruner goroutine (DB.pruner) applies every Every, as an
// ordinary logged prune: the memories it selects are deleted exactly as
// MEM.PRUNE deletes them. The policy is state: it is logged (a
// recPrunePolicy record of kind policySet) and kept in checkpoints (the
// collection section sectPrunePolicy), and so is the time and count of
// each run (kind policyRan), so that a restart neither forgets the policy
// nor starts its schedule over. Encodings: prune_policy_codec.go.
//
// A policy is first applied Every after it is set, then Every after each
// run. The pruner looks for due policies every Options.PruneInterval
// (a second by default), so a run is up to that late.

// DefaultPruneInterval is the default of Options.PruneInterval.
const DefaultPruneInterval = time.Second

// MinPruneEvery is the shortest PrunePolicy.Every: a policy run takes the
// collection's write lock and logs a record even when it prunes nothing.
const MinPruneEvery = time.Second

// PrunePolicy is a prune the pruner applies to a collection every Every.
type PrunePolicy struct {
	// Prune selects the memories deleted, as Collection.Prune does. It is
	// validated as Prune validates it; DryRun must be false.
	Prune PruneOptions
	// Every is the time between runs: MinPruneEvery to MaxPruneAge.
	Every time.Duration
}

// validate returns an error wrapping ErrNoCriterion, ErrBadNumber or
// ErrBadParam when p is not a valid policy.
func (p *PrunePolicy) validate() error {
	if p.Prune.DryRun {
		return fmt.Errorf("%w: DRYRUN has no meaning in a prune policy", ErrBadParam)
	}
	if err := p.Prune.validate(); err != nil {
		return err
	}
	if p.Every < MinPruneEvery || p.Every > MaxPruneAge {
		return fmt.Errorf("%w: EVERY must be %v to %v", ErrBadParam, MinPruneEvery, MaxPruneAge)
	}
	if f := p.Prune.Filter; f != nil {
		// The policy keeps the filter's canonical text and parses it again
		// at every load (prune_policy_codec.go); one that would not parse
		// (longer than filter.MaxExprLen once fully parenthesized) is
		// refused now rather than making the database unopenable.
		if _, err := filter.Parse(f.String()); err != nil {
			return fmt.Errorf("%w: FILTER: its canonical form %q does not parse again: %v", ErrBadParam, f.String(), err)
		}
	}
	return nil
}

// PruneStatus is a collection's prune policy and its latest run.
type PruneStatus struct {
	// Policy is the policy, or nil when the collection has none. The
	// caller must not change it.
	Policy *PrunePolicy
	// Since is when the policy was set (zero when none).
	Since time.Time
	// LastRun is when the pruner last applied a policy to the collection
	// (zero if never), and LastCount how many memories that run pruned.
	// They survive removing the policy and restarts.
	LastRun   time.Time
	LastCount int64
}

// pruneState is a collection's policy state (Collection.prune, guarded by
// Collection.mu).
type pruneState struct {
	// policy is the policy in force, or nil. INVARIANT: valid; never
	// changed once set, only replaced (PruneStatus hands it out).
	policy *PrunePolicy
	setAt  int64 // unix nanoseconds the policy was set; 0 when none
	// lastAt and lastCount describe the latest run (lastAt 0: never).
	lastAt    int64
	lastCount uint64
}

// dueAt returns when the policy is next due.
// REQUIRES: st.policy != nil.
func (st *pruneState) dueAt() int64 {
	base := max(st.setAt, st.lastAt)
	if base > math.MaxInt64-int64(st.policy.Every) {
		return math.MaxInt64
	}
	return base + int64(st.policy.Every)
}

// SetPrunePolicy gives the collection policy p, replacing any it had, or
// with p nil removes it, and returns once the change is durable. A bad p
// changes nothing. The first run is p.Every from now.
func (c *Collection) SetPrunePolicy(p *PrunePolicy) error {
	t, err := c.SetPrunePolicyDeferred(p)
	if err != nil {
		return err
	}
	return c.db.WaitDurable(t)
}

// SetPrunePolicyDeferred is SetPrunePolicy returning the ticket to wait for
// before acknowledging instead of waiting (removing no policy changes
// nothing and returns ticket 0).
func (c *Collection) SetPrunePolicyDeferred(p *PrunePolicy) (Ticket, error) {
	if p != nil {
		cp := *p // ours from here on: the caller may reuse p
		if err := cp.validate(); err != nil {
			return 0, err
		}
		p = &cp
	}
	if err := c.lockLive(); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	if p == nil && c.prune.policy == nil {
		return 0, nil
	}
	return c.logPolicyLocked(policyRec{uid: c.uid, kind: policySet, at: c.db.nowNanos(), policy: p})
}

// PruneStatus returns the collection's prune policy and its latest run.
func (c *Collection) PruneStatus() (PruneStatus, error) {
	if err := c.rlockLive(); err != nil {
		return PruneStatus{}, err
	}
	defer c.mu.RUnlock()
	st := c.prune
	var s PruneStatus
	if st.policy != nil {
		s.Policy, s.Since = st.policy, time.Unix(0, st.setAt)
	}
	if st.lastAt != 0 {
		s.LastRun, s.LastCount = time.Unix(0, st.lastAt), int64(st.lastCount)
	}
	return s, nil
}

// REQUIRES: c.mu held for writing.
func (c *Collection) logPolicyLocked(r policyRec) (Ticket, error) {
	lsn, err := c.db.logFor(c.name, encodePolicyRec(r))
	if err != nil {
		return 0, err
	}
	c.applyPolicyLocked(r)
	return Ticket(lsn), nil
}

// applyPolicyLocked applies a logged policy change or run; replay calls it
// too. REQUIRES: c.mu held for writing (or c not yet shared).
func (c *Collection) applyPolicyLocked(r policyRec) {
	switch r.kind {
	case policySet:
		c.prune.policy, c.prune.setAt = r.policy, r.at
		if r.policy == nil {
			c.prune.setAt = 0
		}
	case policyRan:
		c.prune.lastAt, c.prune.lastCount = r.at, r.count
	}
}

// runPrunePolicy applies the collection's policy if it is due: the
// selected memories are deleted as Prune deletes them, then the run is
// logged. It reports whether it ran, how many it pruned and the ticket to
// wait for. (A crash before the run's record is durable loses nothing a
// client was told: some deletes may be kept and the run is redone early.)
func (c *Collection) runPrunePolicy() (ran bool, n int, t Ticket, err error) {
	now := c.db.nowNanos()
	// A look under the read lock first: most rounds find nothing due.
	if err := c.rlockLive(); err != nil {
		return false, 0, 0, err
	}
	policy := c.prune.policy
	due := policy != nil && now >= c.prune.dueAt()
	c.mu.RUnlock()
	if !due {
		return false, 0, 0, nil
	}
	// The policy's filter, if any, evaluated in steps under the read
	// lock (pruneMatches); a policy changed meanwhile is run on its own
	// filter's matches, found under the write lock.
	matches, err := c.pruneMatches(context.Background(), policy.Prune)
	if err != nil {
		return false, 0, 0, err
	}
	if err := c.lockLive(); err != nil {
		return false, 0, 0, err
	}
	defer c.mu.Unlock()
	p := c.prune.policy
	if p == nil || now < c.prune.dueAt() {
		return false, 0, 0, nil // changed while unlocked
	}
	if p != policy {
		matches = nil
	}
	ids := c.pruneSelectLocked(p.Prune, matches)
	for start := 0; start < len(ids); start += deleteChunk {
		lsn, err := c.deleteIDsLocked(ids[start:min(start+deleteChunk, len(ids))])
		if err != nil {
			return true, start, t, err
		}
		t = Ticket(lsn)
	}
	t, err = c.logPolicyLocked(policyRec{uid: c.uid, kind: policyRan, at: now, count: uint64(len(ids))})
	return true, len(ids), t, err
}

// RunPrunePolicies runs one round of the pruner now: every collection
// whose policy is due is pruned. It returns how many memories it pruned,
// once every change is durable, and calls Options.OnPrune for each run.
// The pruner runs it every Options.PruneInterval; tests call it directly.
func (db *DB) RunPrunePolicies() (int, error) {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return 0, ErrClosed
	}
	colls := make([]*Collection, 0, len(db.byUID))
	for _, c := range db.byUID {
		colls = append(colls, c)
	}
	db.mu.RUnlock()
	total := 0
	type run struct {
		name string
		n    int
	}
	var runs []run
	var last Ticket
	for _, c := range colls {
		ran, n, t, err := c.runPrunePolicy()
		if err != nil {
			if c.isDropped() {
				continue // dropped (or closed) since the listing
			}
			return total, err
		}
		if ran {
			total += n
			last = max(last, t)
			runs = append(runs, run{c.name, n})
		}
	}
	if err := db.WaitDurable(last); err != nil {
		return total, err
	}
	if db.opts.OnPrune != nil {
		for _, r := range runs {
			db.opts.OnPrune(r.name, r.n)
		}
	}
	return total, nil
}

// pruner runs RunPrunePolicies every Options.PruneInterval until Close.
func (db *DB) pruner() {
	db.runEvery(db.opts.PruneInterval, db.pruneDone, func() {
		if _, err := db.RunPrunePolicies(); err != nil {
			db.opts.Logf("memrl: prune policy: %v", err)
		}
	})
}

// loadPruneSectionLocked takes the policy state from a checkpoint section.
// REQUIRES: c not yet shared.
func (c *Collection) loadPruneSectionLocked(data []byte) error {
	st, err := decodePruneSection(data)
	if err != nil {
		return fmt.Errorf("%w: collection %q: %v", ErrCorruptCheckpoint, c.name, err)
	}
	c.prune = st
	return nil
}
