package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memrl/memrl/engine/filter"
)

// Defaults of a retrieval.
const (
	DefaultK1     = 10
	DefaultK2     = 5
	DefaultLambda = 0.5
	// MaxK bounds K1 and K2: a retrieval is a prompt's worth of memories,
	// not a bulk export.
	MaxK = 10000
	// MaxRefine bounds REFINE: the index keeps K1·REFINE candidates, so an
	// unbounded factor is an allocation (or an overflow) a client chooses.
	MaxRefine = 256
)

// RetrieveOptions are the knobs of a two-phase retrieval. Use
// NewRetrieveOptions for the defaults.
type RetrieveOptions struct {
	SearchOptions         // phase 1: K1, DELTA, and the index's NPROBE/REFINE
	K2            int     // memories returned
	Lambda        float64 // weight of Q against similarity in phase 2, in [0, 1]
	// RawQ ranks phase 2 by (1-λ)·z(sim) + λ·clip(Q, ±RawQClip), Q not
	// z-scored: an ablation of the z-normalisation (phase2.go).
	RawQ        bool
	WithPayload bool
	WithAttrs   bool // set Result.Attrs
	// Filter, when not nil, restricts the retrieval to the memories whose
	// attributes match it: phase 1 returns the K1 most similar memories
	// that match (never a global top K1 filtered afterwards), narrowed by
	// the indexed fields' bitmaps and checked on the attributes for the
	// rest (filter_ops.go, and "Filtered search" in doc.go).
	Filter *filter.Expr
}

// NewRetrieveOptions returns the defaults: K1=10, K2=5, λ=0.5, no threshold.
func NewRetrieveOptions() RetrieveOptions {
	return RetrieveOptions{SearchOptions: SearchOptions{K1: DefaultK1}, K2: DefaultK2, Lambda: DefaultLambda}
}

// Validate reports whether o is usable.
func (o RetrieveOptions) Validate() error {
	if o.K1 < 1 || o.K1 > MaxK {
		return fmt.Errorf("%w: K1 must be 1..%d, got %d", ErrBadParam, MaxK, o.K1)
	}
	if o.K2 < 1 || o.K2 > MaxK {
		return fmt.Errorf("%w: K2 must be 1..%d, got %d", ErrBadParam, MaxK, o.K2)
	}
	if o.Refine > MaxRefine {
		return fmt.Errorf("%w: REFINE must be at most %d, got %d", ErrBadParam, MaxRefine, o.Refine)
	}
	if o.Stop != 0 && !(o.Stop > 0 && o.Stop <= 1) {
		return fmt.Errorf("%w: STOP must be in (0, 1], got %v", ErrBadParam, o.Stop)
	}
	// The index takes the factor as a float32, where a positive value
	// below the smallest float32 becomes 0, which means the default: refuse
	// it rather than search with a factor the caller did not ask for.
	if o.Stop != 0 && float32(o.Stop) == 0 {
		return fmt.Errorf("%w: STOP %v is below the smallest positive float32", ErrBadParam, o.Stop)
	}
	if math.IsNaN(o.Lambda) || o.Lambda < 0 || o.Lambda > 1 {
		return fmt.Errorf("%w: LAMBDA must be in [0, 1], got %v", ErrBadParam, o.Lambda)
	}
	if o.Path < PathAuto || o.Path > PathIndex {
		return fmt.Errorf("%w: unknown phase-1 path %d", ErrBadParam, o.Path)
	}
	if o.HasDelta && !finite(o.Delta) {
		return fmt.Errorf("%w: DELTA", ErrBadNumber)
	}
	return nil
}

// Result is one retrieved memory.
type Result struct {
	ID      uint64
	Sim     float64 // phase-1 similarity (cosine, dot product, or minus squared L2)
	Q       float64 // learned utility at retrieval time
	Score   float64 // phase-2 score
	Payload []byte  // set when WithPayload
	// PayloadLen is the payload's length, set always: a server can bound
	// or stream a reply before reading any payload (Collection.Payload).
	PayloadLen uint32
	Key        string // the memory's key, or "" (set always)
	Attrs      []byte // its attributes (compact JSON) when WithAttrs, or nil; shared: do not modify
}

// phase1OptionsLocked returns the phase-1 options of a retrieval: opt's,
// with the rows the filter allows and a residual Match for what the index
// of attributes cannot decide, and for expired memories not yet swept (so
// that they take no phase-1 slot from a live memory).
// REQUIRES: c.mu held for reading at least.
func (c *Collection) phase1OptionsLocked(opt RetrieveOptions, now int64) SearchOptions {
	so := opt.SearchOptions
	var match func(row uint32) bool
	switch {
	case opt.Filter != nil:
		p := c.planLocked(opt.Filter)
		if p.rows != nil {
			if so.Allow != nil {
				p.rows = roaring.And(so.Allow, p.rows)
			}
			so.Allow = p.rows
		}
		if !p.exact || len(c.expiring) > 0 {
			match = func(row uint32) bool { return c.matchLocked(p, c.mems[c.rowIDs[row]], now) }
		}
		// No indexed field narrows the rows: the index would probe its
		// unscaled NPROBE and widen only by count, so a filter matching
		// a share s of the memories would look for its top K1 in the
		// lists of the unfiltered top K1 (recall@10 0.84-0.94 for
		// tenants of 0.1-5% at 1M, bench filter --attrs). Scale the
		// lists as an allowed set of the estimated share would be
		// (filteredNProbe). Not with a caller's Allow: the index scales
		// by that itself.
		if p.rows == nil && so.Allow == nil {
			if ip, ok := c.index.(ivfPhase1); ok {
				rows := len(c.rowIDs)
				est := uint64(math.Ceil(c.estimateShareLocked(p, now) * float64(rows)))
				so.NProbe = filteredNProbe(so.NProbe, ip.ix.Params().NList, est, rows)
			}
		}
	case len(c.expiring) > 0:
		match = func(row uint32) bool { return !c.mems[c.rowIDs[row]].expiredAt(now) }
	}
	if match != nil {
		if prev := so.Match; prev != nil {
			so.Match = func(row uint32) bool { return prev(row) && match(row) }
		} else {
			so.Match = match
		}
	}
	return so
}

// Retrieve is RetrieveContext without a deadline.
func (c *Collection) Retrieve(query []float32, opt RetrieveOptions) ([]Result, error) {
	return c.RetrieveContext(context.Background(), query, opt)
}

// RetrieveContext runs two-phase retrieval: phase 1 recalls the K1
// memories most similar to query whose similarity is at least DELTA;
// phase 2 ranks them by (1-λ)·z(sim) + λ·clip(z(Q), ±3) and returns the
// best K2, best first. An expensive filter is evaluated in bounded steps
// that let writers in (retrieve_steps.go); ctx is checked before the
// retrieval and between those steps, and when it is done the error wraps
// ctx.Err().
func (c *Collection) RetrieveContext(ctx context.Context, query []float32, opt RetrieveOptions) ([]Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	q, err := c.checkVector(query)
	if err != nil {
		return nil, err
	}
	return c.retrieveChecked(ctx, q, opt)
}

// retrieveChecked is RetrieveContext of a query checkVector returned: it
// must not be checked again, as a COSINE query would be normalised a
// second time, which can move the last bit of its components and so of
// every similarity (FuzzMemArgs found a batch of one query whose results
// differed from the query's alone that way). REQUIRES: opt validated.
func (c *Collection) retrieveChecked(ctx context.Context, q []float32, opt RetrieveOptions) ([]Result, error) {
	if err := checkCtx(c, ctx); err != nil {
		return nil, err
	}
	if err := c.rlockLive(); err != nil {
		return nil, err
	}
	cands, err := c.phase1StepsLocked(ctx, q, opt, c.db.nowNanos())
	if err != nil {
		return nil, err // the lock is released
	}
	defer c.mu.RUnlock()
	return c.phase2Locked(cands, opt)
}

// phase2Locked is a retrieval's phase 2 over phase 1's candidates: it
// leaves out expired and damaged rows, ranks the rest by similarity and Q
// (rankPhase2Opts) and returns the best K2 with what opt asks for.
// REQUIRES: c.mu held for reading; cands are rows of the numbering in
// force.
func (c *Collection) phase2Locked(cands []candidate, opt RetrieveOptions) ([]Result, error) {
	var err error
	now := c.db.nowNanos()
	// Phase 1 read every row from the mapping without checking it (a
	// checksum per row scanned would make the scan 3-4 times slower:
	// BenchmarkRowSum against BenchmarkExactScanRows); the candidates'
	// rows are checked here, so a damaged vector is never served as a
	// result, nor ranks one: it is left out and logged, and the retrieval
	// goes on with the others, as Open leaves damaged rows out of searches.
	// (A row damaged into looking dissimilar just drops out unnoticed;
	// Verify finds it.)
	// Expired memories not yet swept are left out by phase 1's Match
	// (phase1OptionsLocked); checked again here, as they must never be
	// returned (expiry.go).
	kept := cands[:0]
	for _, cd := range cands {
		if len(c.expiring) > 0 && c.mems[c.rowIDs[cd.row]].expiredAt(now) {
			continue
		}
		if err := c.vecs.checkRow(cd.row); err != nil {
			c.reportLocked(fmt.Errorf("memory %d left out of a retrieval: %w", c.rowIDs[cd.row], err))
			continue
		}
		kept = append(kept, cd)
	}
	cands = kept
	pool := make([]scored, len(cands))
	for i, cd := range cands {
		id := c.rowIDs[cd.row]
		e, _ := c.q.Get(id)
		sim := float64(cd.sim)
		if sim == 0 {
			sim = 0 // -0 (an L2 distance of 0, negated) reads as "-0"
		}
		pool[i] = scored{id: id, row: cd.row, sim: sim, q: e.Q}
	}
	ranked := rankPhase2Opts(pool, opt.Lambda, opt.K2, opt.RawQ)
	out := make([]Result, len(ranked))
	for i, s := range ranked {
		m := c.mems[s.id]
		out[i] = Result{ID: s.id, Sim: s.sim, Q: s.q, Score: s.score, PayloadLen: m.payLen, Key: m.key()}
		if opt.WithAttrs {
			out[i].Attrs = m.attrs()
		}
		if opt.WithPayload {
			if out[i].Payload, err = c.pays.get(s.id, m.payOff, m.payLen); err != nil {
				return nil, c.reportLocked(err)
			}
		}
	}
	return out, nil
}
