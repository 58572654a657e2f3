package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/memrl/memrl/engine"
)

// MEM.MRETRIEVE: many retrievals in one command (docs/PROTOCOL.md,
// "MEM.MRETRIEVE").
//
//	MEM.MRETRIEVE coll [option …] QUERIES n (FP32 blob | VALUES d v…) × n
//
// The options are MEM.RETRIEVE's, parsed by the same code
// (retrieveArgs.option), and apply to every query. The reply is an array
// of n elements, element i being exactly what MEM.RETRIEVE with those
// options replies for query i.
//
// Bounds: n is at most MaxMRetrieveQueries. The whole reply is built in
// memory before any of it is sent, as EXEC builds its reply (txreply.go):
// every byte is reserved from the client-memory budget (--maxmemory) as it
// is written, and a reply that does not fit is dropped and answered with
// -OOM; the reply is also held to --max-reply-bytes. The command's context
// (busy-timeout, client gone: busy.go) is checked before every step of
// queries. A query the engine refuses (wrong dimension, NaN…) fails the
// command with an error naming it ("query 3: …", counting from 1 as
// MEM.MADD's "memory 3: …"), and nothing else is replied. A retrieval
// changes nothing, so an error or a refusal after some queries ran leaves
// the database as it was.

// MaxMRetrieveQueries bounds the n of MEM.MRETRIEVE's QUERIES n: a batch
// is what a client would pipeline, not an export. A larger n is refused
// before anything runs.
const MaxMRetrieveQueries = 1024

// mretrieveStepRows bounds the result rows one step of a MEM.MRETRIEVE
// holds before they are written to its reply: a step is
// mretrieveStepRows/K2 queries (at least one), so K2 10000 does not hold
// 1024 × 10000 results at once, while K2 ≤ 64 runs the whole batch as one
// engine call.
const mretrieveStepRows = 64 << 10

// mretrieveAdmitK1 bounds a MEM.MRETRIEVE step by its phase-1 work, the
// step holding one search slot (admission.go) from start to end: a step
// is at most mretrieveAdmitK1/K1 queries (at least one), so 16 queries at
// the default K1 10 and one at K1 ≥ 160. Users whose steps wait are
// served one step each in turn, so a step must be short: 16 queries of K1 10 on
// 100k SIFT memories are about 4 ms of one core, one of K1 100 about
// 1 ms, one of K1 1000 about 8 ms (bench/fairflood). A single query of
// K1 10000 is one step of ~160 ms: a step is never less than one query.
// Smaller steps cost the batch nothing measurable there: 64 queries took
// 0.23 ms each, 1024 in one batch 0.61 ms each, on the same (loaded)
// machine.
const mretrieveAdmitK1 = 160

// mretrieveAloneK1 is mretrieveAdmitK1 for a step whose user is alone
// (searchGate.alone: no other user's step runs, waits, or ended in the
// last aloneIdle), so 64 queries at K1 10: the whole command of clients
// batching 64 at a time, as the engine's batch path is best fed. On the 1M
// SIFT index a batch of 64 costs 5–10% less CPU a query than 4 of 16 (in
// process, one thread), and through the server (16 clients × MEM.MRETRIEVE
// of 64) the in-process batch's CPU a query over the server's went from
// 0.78 to 0.83 (medians of 17 alternated rounds; docs/BENCHMARKS.md). A
// longer step can keep another user waiting only if that user arrives
// while it runs and already has a step running (a user's first step
// borrows a slot), and only for this one step: the next is sized again.
// So the bound is 4 shared steps, ~16 ms of a core at K1 10 on 100k
// memories.
const mretrieveAloneK1 = 4 * mretrieveAdmitK1

// mretrieveAdmitQueries returns the queries of one admitted step with
// opt, alone telling whether the step's user is the only one searching.
func mretrieveAdmitQueries(opt engine.RetrieveOptions, alone bool) int {
	k1 := mretrieveAdmitK1
	if alone {
		k1 = mretrieveAloneK1
	}
	return max(1, k1/max(1, opt.K1))
}

// mretrieveArgs is a parsed MEM.MRETRIEVE.
type mretrieveArgs struct {
	retrieveArgs
	queries [][]float32
}

// parseMRetrieve parses MEM.MRETRIEVE's arguments after the collection
// name. The vectors are parsed only (argList.vector); the engine checks
// their dimension and components.
func parseMRetrieve(args [][]byte) (mretrieveArgs, error) {
	r := mretrieveArgs{retrieveArgs: newRetrieveArgs()}
	a := argList{args: args}
	for a.more() {
		k := a.keyword()
		if k == "QUERIES" {
			return r, r.parseQueries(&a)
		}
		ok, err := r.option(&a, k)
		if !ok {
			err = fmt.Errorf("syntax error: unknown MEM.MRETRIEVE option %q", k)
		}
		if err != nil {
			return r, err
		}
	}
	return r, fmt.Errorf("syntax error: QUERIES n expected")
}

// parseQueries parses "n" and the n vectors after QUERIES, which must end
// the command.
func (r *mretrieveArgs) parseQueries(a *argList) error {
	n, err := a.int("QUERIES count")
	if err != nil {
		return err
	}
	if n < 1 || n > MaxMRetrieveQueries {
		return fmt.Errorf("%w: QUERIES count must be 1..%d, got %d", engine.ErrBadParam, MaxMRetrieveQueries, n)
	}
	// Each vector takes at least 2 arguments: refuse a count the
	// arguments cannot hold before allocating for it.
	if left := len(a.args) - a.i; 2*n > left {
		return fmt.Errorf("syntax error: QUERIES %d but only %d arguments follow", n, left)
	}
	r.queries = make([][]float32, n)
	for i := range r.queries {
		if r.queries[i], err = a.vector(); err != nil {
			return fmt.Errorf("query %d: %w", i+1, err)
		}
	}
	if a.more() {
		return fmt.Errorf("syntax error: QUERIES %d is followed by %d more arguments; QUERIES comes last", n, len(a.args)-a.i)
	}
	return nil
}

// MEM.MRETRIEVE coll [K1 n] [K2 n] [LAMBDA l] [DELTA x] [NPROBE n]
// [REFINE n] [STOP f] [RAWQ] [WITHPAYLOAD] [WITHATTRS] [WITHKEYS]
// [FILTER expr] QUERIES n (FP32 blob | VALUES d v1 … vd)…
func (m memCommands) mretrieve(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	r, err := parseMRetrieve(args[1:])
	if err != nil {
		return err
	}
	// Validated once here, so that a bad option is reported as it is by
	// MEM.RETRIEVE and not as query 1's fault.
	opt := r.engineOptions()
	if err := opt.Validate(); err != nil {
		return err
	}
	reply := &replyBuf{b: &c.conn.srv.budget}
	defer reply.release()
	if err := m.mretrieveInto(c, reply, coll, r, opt); err != nil {
		return err
	}
	// Nothing has gone to the client yet: now all of it does.
	c.WriteArrayHeader(len(r.queries))
	for _, b := range reply.chunks {
		c.raw(b)
	}
	return nil
}

// mretrieveInto runs r's retrievals step by step and writes their replies
// to reply, through c's reply helpers pointed at reply for the time.
func (m memCommands) mretrieveInto(c *Ctx, reply *replyBuf, coll *engine.Collection, r mretrieveArgs, opt engine.RetrieveOptions) error {
	mem := NewWriter(reply)
	real := c.Writer
	c.Writer = mem
	defer func() { c.Writer = real }()
	ctx := c.Context()
	rows := max(1, mretrieveStepRows/opt.K2)
	for start := 0; start < len(r.queries); {
		if err := ctx.Err(); err != nil {
			return err // busy-timeout or client gone: busyErr replies
		}
		res, n, err := mretrieveStep(c, ctx, coll, r.queries[start:], opt, rows)
		if err != nil {
			return mretrieveErr(start, err)
		}
		start += n
		for i := range res {
			if err := m.writeRetrieved(c, coll, res[i], r.retrieveArgs); err != nil {
				return err
			}
			res[i] = nil // the results are written: let them go
		}
		if err := mem.Flush(); err != nil || reply.refused {
			return errClientMemory
		}
		if err := c.CheckReplySize(reply.size); err != nil {
			return err
		}
	}
	return nil
}

// mretrieveStep runs one step of a MEM.MRETRIEVE, the first of qs, the
// queries left, at most rows of them, and returns their results and how
// many it ran. Each step is admitted on its own (admission.go): between
// steps the slot goes to other users' waiting searches. Its queries are
// counted once the slot is held, longer while no other user searches, and
// go to the engine as one batch, with the offers of this user's steps
// waiting for the same search (coalesce.go). A step that waits offers
// its queries counted as if alone (it can be taken only while its user is
// alone) and may be run by another step instead.
func mretrieveStep(c *Ctx, ctx context.Context, coll *engine.Collection, qs [][]float32, opt engine.RetrieveOptions, rows int) ([][]engine.Result, int, error) {
	var offer *coalesceOffer
	if !c.conn.inExec {
		offer = newCoalesceOffer(coll, opt, qs[:min(len(qs), rows, mretrieveAdmitQueries(opt, true))])
	}
	joined, err := c.admitSearchOffer(offer)
	if err != nil {
		return nil, 0, err
	}
	if joined {
		select {
		case <-offer.done:
			return offer.res, len(offer.queries), offer.err
		case <-ctx.Done():
			return nil, 0, ctx.Err() // the results are dropped
		}
	}
	defer c.doneSearch()
	g := &c.conn.srv.gate
	user := c.conn.searchUser()
	alone := g.alone(user)
	n := min(len(qs), rows, mretrieveAdmitQueries(opt, alone))
	if alone && offer != nil {
		own := newCoalesceOffer(coll, opt, qs[:n])
		limit := max(n, min(rows, mretrieveCoalesceK1/max(1, opt.K1)))
		if others := g.take(user, own, limit); len(others) > 0 {
			runCoalesced(ctx, coll, opt, own, others)
			return own.res, n, own.err
		}
	}
	res, err := retrieveBatch(ctx, coll, qs[:n], opt)
	return res, n, err
}

// retrieveBatch runs one retrieval per query of qs with opt, results in
// query order (engine.Collection.RetrieveBatch: every query is checked
// before any is searched; a bad one fails the call as "query i: …", i its
// 0-based index in qs). One thread: the server's clients keep the cores
// busy.
func retrieveBatch(ctx context.Context, coll *engine.Collection, qs [][]float32, opt engine.RetrieveOptions) ([][]engine.Result, error) {
	return coll.RetrieveBatch(ctx, qs, opt, 1)
}

// mretrieveErr returns the error of the step of queries starting at the
// command's query start (counting from 0): the engine names a query by
// its index in the step ("query i: …", from 0), which becomes its
// position among the command's queries, counting from 1 as MEM.MADD's
// "memory n: …". Any other error (the context's end, a reply's) is
// returned as it is, so that busyErr and the -OOM code still apply.
func mretrieveErr(start int, err error) error {
	rest, ok := strings.CutPrefix(err.Error(), "query ")
	if !ok {
		return err
	}
	n, _, ok := strings.Cut(rest, ": ")
	i, perr := strconv.Atoi(n)
	if inner := errors.Unwrap(err); ok && perr == nil && inner != nil {
		return fmt.Errorf("query %d: %w", start+i+1, inner)
	}
	return err
}
