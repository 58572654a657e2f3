package loop

import (
	"context"
	"fmt"
	"math/rand"
	"time"
)

// Params are the agent's knobs, shared by every configuration of a run.
type Params struct {
	Epochs  int
	K1, K2  int     // phase-1 pool and memories acted on
	Epsilon float64 // ε-greedy: the share of training episodes that act on K2 random memories of the pool
	Alpha   float64 // the collections' learning rate (MEM.CREATE ALPHA)
	QInit   float64 // Q of seeded memories
	QNew    float64 // Q of an experience added after a success (MEM.ADD … Q)
	Settle  float64 // Q has settled when |mean(r − Q)| over an epoch's worth of rewarded episodes falls below it
	Bins    int     // Q bins of the calibration, over [0, 1]
	// Index is the collections' MEM.CREATE INDEX: "" (the server's
	// default, IVFPQ: exact until 10,000 memories, then an index trained
	// and retrained in the background, so phase 1 is approximate and when
	// a build lands among the episodes varies from run to run) or FLAT
	// (always exact: runs repeat exactly).
	Index string
}

// Run is what one configuration (a λ, or no memory) measured on one seed.
type Run struct {
	PerEpoch []float64 // success rate of each training epoch
	Solved   float64   // share of tasks with at least one success
	BinN     []int     // calibration: memories acted on, by Q bin at retrieval
	BinS     []int     // … of which the episode succeeded
	TDErr    []float64 // mean r − Q (Q before the reward) of each rewarded episode's memories, in order
	Lat      []time.Duration
}

// agent plays episodes against one collection.
type agent struct {
	st     Store
	coll   string
	env    *Env
	p      Params
	lambda float64
	rawQ   bool
	noMem  bool
	rng    *rand.Rand
	run    *Run
	solved map[int]bool
}

// episode plays task t once: retrieve, act on K2 memories (K2 random ones
// of the pool with probability ε when learning), and when learning reward
// them and add the experience if it succeeded. It returns the reward and
// the success probability the agent acted with (before noise).
func (a *agent) episode(ctx context.Context, t Task, learn bool) (r, prob float64, err error) {
	if a.noMem {
		prob = SuccessProb(0, 0)
		r = act(a.rng, prob)
		if r == 1 {
			a.solved[t.ID] = true
		}
		return r, prob, nil
	}
	q := a.env.Query(a.rng, t)
	t0 := time.Now()
	hits, err := a.st.Retrieve(ctx, a.coll, q, a.p.K1, a.p.K1, a.lambda, a.rawQ)
	a.run.Lat = append(a.run.Lat, time.Since(t0))
	if err != nil {
		return 0, 0, err
	}
	chosen := hits[:min(a.p.K2, len(hits))]
	if learn && a.rng.Float64() < a.p.Epsilon {
		perm := a.rng.Perm(len(hits))[:len(chosen)]
		chosen = make([]Hit, len(perm))
		for i, j := range perm {
			chosen[i] = hits[j]
		}
	}
	var u float64
	for _, h := range chosen {
		u += Usefulness(h.Payload, t.ID)
	}
	if len(chosen) > 0 {
		u /= float64(len(chosen))
	}
	prob = SuccessProb(u, len(chosen))
	r = act(a.rng, prob)
	if r == 1 {
		a.solved[t.ID] = true
	}
	if !learn || len(chosen) == 0 {
		return r, prob, nil
	}
	ids := make([]int64, len(chosen))
	for i, h := range chosen {
		ids[i] = h.ID
	}
	newQ, err := a.st.Reward(ctx, a.coll, r, ids)
	if err != nil {
		return 0, 0, err
	}
	if len(newQ) != len(chosen) {
		return 0, 0, fmt.Errorf("MEM.REWARD returned %d values for %d memories", len(newQ), len(chosen))
	}
	var td float64
	for _, h := range chosen {
		td += r - h.Q
		b := int(h.Q * float64(a.p.Bins))
		b = max(0, min(a.p.Bins-1, b))
		a.run.BinN[b]++
		if r == 1 {
			a.run.BinS[b]++
		}
	}
	a.run.TDErr = append(a.run.TDErr, td/float64(len(chosen)))
	if r == 1 {
		if _, err := a.st.Add(ctx, a.coll, Memory{Vec: q, Q: a.p.QNew, Payload: payload('n', t.ID)}); err != nil {
			return 0, 0, err
		}
	}
	return r, prob, nil
}

// epoch plays every task of tasks once, in a random order, and returns the
// success rate: the share of successes when learning, the mean success
// probability when evaluating (less noisy, and an evaluation changes
// nothing).
func (a *agent) epoch(ctx context.Context, tasks []Task, learn bool) (float64, error) {
	var sum float64
	for _, i := range a.rng.Perm(len(tasks)) {
		r, prob, err := a.episode(ctx, tasks[i], learn)
		if err != nil {
			return 0, err
		}
		if learn {
			sum += r
		} else {
			sum += prob
		}
	}
	return sum / float64(len(tasks)), nil
}

// newAgent creates coll, loads the environment's seeded memories into it,
// and returns an agent over it; drop removes the collection.
func newAgent(ctx context.Context, st Store, env *Env, p Params, coll string, lambda float64, rawQ, noMem bool, seed int64) (*agent, error) {
	a := &agent{st: st, coll: coll, env: env, p: p, lambda: lambda, rawQ: rawQ, noMem: noMem,
		rng: rand.New(rand.NewSource(seed)), solved: map[int]bool{},
		run: &Run{BinN: make([]int, p.Bins), BinS: make([]int, p.Bins)}}
	if noMem {
		return a, nil
	}
	st.Drop(ctx, coll) // a leftover of an interrupted run; an error means there was none
	if err := st.Create(ctx, coll, env.Dim, p.Alpha, p.QInit, p.Index); err != nil {
		return nil, fmt.Errorf("MEM.CREATE %s: %w", coll, err)
	}
	const batch = 1000
	for i := 0; i < len(env.Seed); i += batch {
		if err := st.MAdd(ctx, coll, env.Seed[i:min(i+batch, len(env.Seed))]); err != nil {
			return nil, fmt.Errorf("MEM.MADD %s: %w", coll, err)
		}
	}
	return a, nil
}

func (a *agent) drop(ctx context.Context) {
	if !a.noMem {
		a.st.Drop(ctx, a.coll)
	}
}

// Train runs p.Epochs training epochs over every task for one λ (or with
// no memory) in its own collection.
func Train(ctx context.Context, st Store, env *Env, p Params, coll string, lambda float64, rawQ, noMem bool, seed int64) (*Run, error) {
	a, err := newAgent(ctx, st, env, p, coll, lambda, rawQ, noMem, seed)
	if err != nil {
		return nil, err
	}
	defer a.drop(ctx)
	for e := 0; e < p.Epochs; e++ {
		rate, err := a.epoch(ctx, env.Tasks, true)
		if err != nil {
			return nil, err
		}
		a.run.PerEpoch = append(a.run.PerEpoch, rate)
	}
	a.run.Solved = float64(len(a.solved)) / float64(len(env.Tasks))
	return a.run, nil
}

// Forgetting is what a forgetting run measured.
type Forgetting struct {
	Before, After float64 // A's evaluated success rate after training on A, and after then training on B
	BRate         float64 // B's success rate in its last training epoch
}

// Forget trains on the even families (A) for p.Epochs, evaluates A, trains
// on the odd families (B, each a neighbour of an A family) for p.Epochs,
// and evaluates A again, at λ, with z-normalised or raw Q.
func Forget(ctx context.Context, st Store, env *Env, p Params, coll string, lambda float64, rawQ bool, seed int64) (Forgetting, *Run, error) {
	var A, B []Task
	for _, t := range env.Tasks {
		if t.Family%2 == 0 {
			A = append(A, t)
		} else {
			B = append(B, t)
		}
	}
	var f Forgetting
	a, err := newAgent(ctx, st, env, p, coll, lambda, rawQ, false, seed)
	if err != nil {
		return f, nil, err
	}
	defer a.drop(ctx)
	for e := 0; e < p.Epochs; e++ {
		if _, err := a.epoch(ctx, A, true); err != nil {
			return f, nil, err
		}
	}
	if f.Before, err = a.epoch(ctx, A, false); err != nil {
		return f, nil, err
	}
	for e := 0; e < p.Epochs; e++ {
		if f.BRate, err = a.epoch(ctx, B, true); err != nil {
			return f, nil, err
		}
	}
	if f.After, err = a.epoch(ctx, A, false); err != nil {
		return f, nil, err
	}
	return f, a.run, nil
}
