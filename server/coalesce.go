package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/memrl/memrl/engine"
)

// Coalescing of MEM.MRETRIEVE steps.
//
// Why: the engine's batch search gets cheaper a query as the batch grows
// (each probed list's codes scanned once for all the queries that probe
// it): on the 1M SIFT index, on one thread, batches of 64 cost 208–240 µs a
// query and batches of 2,000 ~146 µs. A server whose clients each send
// MEM.MRETRIEVE of 64 searched each command's step as its own batch.
//
// So a MEM.MRETRIEVE step that waits for a search slot (admission.go)
// offers its search (a coalesceOffer: the collection, the options and its
// queries); and a step of the same user that starts on the same
// collection with the same options takes, along with its own queries,
// the offers waiting at the head of its user's queue, and runs them all
// as one engine batch (RetrieveBatch), handing each its slice of the
// results. A taken step holds no slot; its command writes its results to
// its own reply as if it had run them, with its own reply bounds,
// --maxmemory accounting and context (busy-timeout, hang-up).
//
// The gate's invariants hold:
//
//   - A step takes offers only while its user is alone (searchGate.alone)
//     and, under the same lock as it takes them, no other user has a step
//     waiting: the steps taken are those the gate would have granted next
//     anyway, in their order, so no other user's step is passed over. The
//     tags of the steps taken count as granted (now advances to the
//     highest): a user's coalesced steps cost in the fair queuing what
//     they cost one by one.
//   - Within a user, steps are still served in arrival order: only the
//     offers at the head of its queue are taken, up to the first that does
//     not match.
//   - A step stays bounded in time: its queries and those it takes are at
//     most mretrieveCoalesceK1/K1 (and the command's result-row bound), so
//     a step another user's second step may wait for is at most that.
//   - Results are those of each command alone: the engine's batch gives
//     every query the results of its own retrieval (RetrieveBatch), and
//     only options that are equal in every field, without a filter, are
//     searched together. A query the engine refuses fails only the command
//     that sent it (its "query i: …" error, i within its own queries); the
//     batch is then run again without that command's queries.
//   - The taker runs the batch without its own context's cancellation
//     (the batch is bounded and others wait for it): a taker that hangs up
//     does not fail the steps it took. A taken step whose command ends
//     (busy-timeout, hang-up) stops waiting at once; its results are
//     dropped.
//   - Steps of transactions (EXEC) never offer: a read-only transaction's
//     step must search after its shared locks are taken back.

// mretrieveCoalesceK1 bounds a coalesced step: its queries, its own and
// those it took, are at most mretrieveCoalesceK1/K1 (at least its own),
// so 512 at K1 10: 8 commands of 64 from clients batching 64 at a time,
// ~75–120 ms of one core on the 1M SIFT index. Such a step runs only
// while its user is alone (no other user searched in the last aloneIdle),
// and another user's first step borrows a slot rather than wait for it.
const mretrieveCoalesceK1 = 8 * mretrieveAloneK1

// errCoalesceAbandoned is a taken step's error if the step that took it
// ended without running it (a panic: the connection closes).
var errCoalesceAbandoned = errors.New("ERR retrieval abandoned by the batch it joined")

// coalesceKey is what steps searched together must share: the collection
// and every option, compared field by field (engine.RetrieveOptions has
// a func field, so is not comparable). Filters never coalesce.
type coalesceKey struct {
	coll        *engine.Collection
	k1          int
	delta       float64
	hasDelta    bool
	nprobe      int
	refine      int
	stop        float64
	path        engine.SearchPath
	k2          int
	lambda      float64
	rawQ        bool
	withPayload bool
	withAttrs   bool
}

// coalesceKeyOf returns opt's key on coll, and false if a step with opt
// may not be searched with others (a filter).
func coalesceKeyOf(coll *engine.Collection, opt engine.RetrieveOptions) (coalesceKey, bool) {
	if opt.Filter != nil || opt.Allow != nil || opt.Match != nil {
		return coalesceKey{}, false
	}
	return coalesceKey{
		coll: coll, k1: opt.K1, delta: opt.Delta, hasDelta: opt.HasDelta,
		nprobe: opt.NProbe, refine: opt.Refine, stop: opt.Stop, path: opt.Path,
		k2: opt.K2, lambda: opt.Lambda, rawQ: opt.RawQ,
		withPayload: opt.WithPayload, withAttrs: opt.WithAttrs,
	}, true
}

// coalesceOffer is one MEM.MRETRIEVE step's search, offered while the
// step waits for a slot.
type coalesceOffer struct {
	key     coalesceKey   // immutable
	queries [][]float32   // immutable; the step's queries
	done    chan struct{} // closed by the taker once res or err is set

	// Set by the taker before done is closed; read by the offer's
	// step after.
	res [][]engine.Result
	err error
}

// newCoalesceOffer returns the offer of a step of queries with opt on
// coll, or nil if such a step may not be taken (a filter).
func newCoalesceOffer(coll *engine.Collection, opt engine.RetrieveOptions, queries [][]float32) *coalesceOffer {
	k, ok := coalesceKeyOf(coll, opt)
	if !ok {
		return nil
	}
	return &coalesceOffer{key: k, queries: queries, done: make(chan struct{})}
}

// take removes from user's queue the offers matching own waiting at its
// head, while their queries and own's total at most limit, and returns
// them; each is then joined (its waiter woken holding no slot) and must
// be run and finished by the caller (runCoalesced). It takes nothing
// while another user has a step waiting.
// REQUIRES: user holds a slot and is alone (searchGate.alone).
func (g *searchGate) take(user string, own *coalesceOffer, limit int) []*coalesceOffer {
	if g.slots <= 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	u := g.users[user]
	if u == nil || len(g.waiting) != 1 || g.waiting[0] != u {
		return nil
	}
	total := len(own.queries)
	var out []*coalesceOffer
	for len(u.waiters) > 0 {
		w := u.waiters[0]
		if w.offer == nil || w.offer.key != own.key || total+len(w.offer.queries) > limit {
			break
		}
		total += len(w.offer.queries)
		u.waiters = u.waiters[1:]
		g.queued--
		g.now = max(g.now, w.tag)
		w.joined = true
		if g.trace != nil {
			g.trace('c', user)
		}
		close(w.ch)
		out = append(out, w.offer)
	}
	if len(u.waiters) == 0 {
		g.waiting = g.waiting[:0]
	}
	return out
}

// runCoalesced runs own's queries and others' as one engine batch on
// coll with opt and sets each offer's res or err; it closes every one of
// others' done, even if it panics. A query the engine refuses fails only
// its offer, and the batch is run again without it. The batch runs
// without ctx's cancellation (see above).
func runCoalesced(ctx context.Context, coll *engine.Collection, opt engine.RetrieveOptions, own *coalesceOffer, others []*coalesceOffer) {
	finished := 0
	defer func() {
		for _, o := range others[finished:] {
			o.res, o.err = nil, errCoalesceAbandoned
			close(o.done)
		}
	}()
	all := append([]*coalesceOffer{own}, others...)
	live := all
	ctx = context.WithoutCancel(ctx)
	for len(live) > 0 {
		var qs [][]float32
		for _, o := range live {
			qs = append(qs, o.queries...)
		}
		res, err := retrieveBatch(ctx, coll, qs, opt)
		if err == nil {
			for _, o := range live {
				o.res, res = res[:len(o.queries):len(o.queries)], res[len(o.queries):]
			}
			break
		}
		i, inner, ok := queryErrIndex(err)
		if !ok || i < 0 || i >= len(qs) {
			for _, o := range live {
				o.err = err
			}
			break
		}
		// The offer holding query i fails alone, named as the engine
		// names it in a batch of that offer's queries.
		for j, o := range live {
			if i < len(o.queries) {
				o.err = fmt.Errorf("query %d: %w", i, inner)
				live = append(live[:j:j], live[j+1:]...)
				break
			}
			i -= len(o.queries)
		}
	}
	for _, o := range others {
		close(o.done)
		finished++
	}
}

// queryErrIndex parses the engine's "query i: …" batch error into i and
// the wrapped error.
func queryErrIndex(err error) (int, error, bool) {
	rest, ok := strings.CutPrefix(err.Error(), "query ")
	if !ok {
		return 0, nil, false
	}
	n, _, ok := strings.Cut(rest, ": ")
	i, perr := strconv.Atoi(n)
	inner := errors.Unwrap(err)
	if !ok || perr != nil || inner == nil {
		return 0, nil, false
	}
	return i, inner, true
}
