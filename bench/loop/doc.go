// Package loop is `memrl bench loop`: the learning-loop benchmark that
// shows, through the server, whether value-aware retrieval pays. It plays a
// MemRL-style agent against a simulated environment over the protocol
// (MEM.CREATE, MEM.MADD, MEM.RETRIEVE, MEM.REWARD, MEM.ADD) with the
// project's Go client, client/ (ClientStore; Store is the small interface
// the agent needs).
//
// # The environment (env.go)
//
// Task families have centres in a 32-dimensional cosine space; each task
// has an intent embedding near its family's centre. For each task the
// collection is seeded with Misleading memories very close to its intent
// (acting on them fails: usefulness 0) and Good ones farther away but
// within the phase-1 pool K1 (the right recipe: usefulness 0.9), so that
// similarity and usefulness disagree (TestEnvDisagrees checks it). The rest
// of the --memories (100,000 by default) are distractors around the family
// centres (usefulness 0.1, as is any memory for a task not its own). Each
// task of an odd family is a neighbour of the same task of the even family
// before it, so that their phase-1 pools overlap.
//
// # The agent (agent.go)
//
// An episode retrieves the K1 pool ranked by phase 2 (K2 = K1), acts on the
// first K2 (ε-greedy: with probability ε on K2 random ones of the pool),
// succeeds with probability 0.05 + 0.9·(mean usefulness) plus Gaussian noise
// (σ 0.05), rewards the memories it acted on with r ∈ {0, 1} (MEM.REWARD)
// and, on a success, adds the episode's query as a new experience
// (usefulness 0.7 for its task) with an initial Q (MEM.ADD … Q). The
// no-memory baseline succeeds with probability 0.1.
//
// # What is measured (report.go)
//
// For λ ∈ {0, 0.25, 0.5, 0.75, 1}, each in its own collection, and no
// memory, over fixed seeds: the success rate of each training epoch (each
// task once, random order), the last epoch's, and the share of tasks ever
// solved; Q calibration: memories acted on binned by their Q at retrieval,
// the success rate of the episodes per bin, and the Pearson r between bin
// centre and rate (bins with at least 20 samples); episodes until Q settles,
// defined as the first point where the mean TD error r − Q over an epoch's
// worth of rewarded episodes is within ±--settle (Q then predicts the
// reward without bias; |ΔQ| itself never falls to 0 with binary rewards and
// a constant α); retrieval p50/p99 as the client sees them. Forgetting:
// train on the even families (A), evaluate A, train on the odd ones (B),
// evaluate A again; evaluations change nothing and report the mean success
// probability. It runs at λ = 0.5 with z-normalised Q and with raw Q
// (MEM.RETRIEVE … RAWQ). Output: Markdown tables and, with --plots, three
// PNGs drawn with gonum.org/v1/plot.
//
// The collections take the server's default index (IVF-PQ) unless --index
// FLAT: past 10,000 memories phase 1 is then approximate and its index is
// built in the background, so runs of the default shape vary slightly; with
// FLAT, a run repeats exactly.
//
// TestLoopShort runs a short version (5,000 memories, 2 seeds) against an
// in-process server and asserts the directions: λ = 0.5 beats λ = 0 and no
// memory by at least 0.15 in the last epoch, and Q is calibrated (r > 0.5).
package loop
