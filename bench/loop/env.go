package loop

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
)

// The usefulness of a memory's recipe for a task: the probability weight
// acting on it carries (act). Only the environment knows it; the agent
// learns it as Q.
const (
	usefulGood       = 0.9 // a seeded right recipe, for its own task
	usefulMisleading = 0.0 // a seeded close-but-wrong recipe, for its own task
	usefulLearned    = 0.7 // an experience the agent added after a success, for its own task
	usefulOther      = 0.1 // any memory for a task that is not its own, and every distractor
	successBase      = 0.05
	successNoMemory  = 0.10 // the no-memory baseline's success probability
	successNoise     = 0.05 // standard deviation of the noise on the success probability
)

// Geometry, as the expected length of a Gaussian perturbation added to a
// unit vector before normalising: the misleading memories sit closest to
// their task's intent, the right recipes farther (still within K1),
// distractors around the family centres farther still.
const (
	spreadTask       = 0.6  // task intent around its family centre
	spreadQuery      = 0.1  // one episode's query around its task intent
	spreadMisleading = 0.15 // misleading memories around the intent
	spreadGood       = 0.4  // right recipes around the intent
	spreadDistractor = 0.9  // distractors around a family centre
	spreadNeighbour  = 0.45 // family 2k+1's centre and tasks around family 2k's
)

// Task is one task: an intent embedding in a family.
type Task struct {
	ID     int
	Family int
	Intent []float32
}

// Env is the simulated environment: task families with intent embeddings,
// and the memories seeded for them. Similarity and usefulness disagree:
// each task has Misleading memories closer to its intent than its Good
// ones. Each task of an odd family is a neighbour of the same task of the
// even family before it (the forgetting run trains on even families, then
// odd, then even again).
type Env struct {
	Dim   int
	Tasks []Task
	Seed  []Memory // misleading, good and distractor memories, shuffled
}

// EnvConfig shapes an Env.
type EnvConfig struct {
	Dim, Families, TasksPerFamily int
	Misleading, Good              int // seeded per task
	Memories                      int // total seeded memories, distractors making up the rest
	QInit                         float64
}

// NewEnv builds an environment from a seed.
func NewEnv(cfg EnvConfig, seed int64) (*Env, error) {
	seeded := cfg.Families * cfg.TasksPerFamily * (cfg.Misleading + cfg.Good)
	if cfg.Memories < seeded {
		return nil, fmt.Errorf("--memories %d is fewer than the %d seeded recipes", cfg.Memories, seeded)
	}
	rng := rand.New(rand.NewSource(seed))
	e := &Env{Dim: cfg.Dim}
	centres := make([][]float32, cfg.Families)
	for f := range centres {
		if f%2 == 1 {
			centres[f] = perturb(rng, centres[f-1], spreadNeighbour)
		} else {
			centres[f] = randUnit(rng, cfg.Dim)
		}
	}
	for f := 0; f < cfg.Families; f++ {
		for i := 0; i < cfg.TasksPerFamily; i++ {
			t := Task{ID: len(e.Tasks), Family: f}
			if f%2 == 1 {
				// A neighbour of the same task of the family before: its
				// phase-1 pool holds that task's recipes, useless here.
				t.Intent = perturb(rng, e.Tasks[t.ID-cfg.TasksPerFamily].Intent, spreadNeighbour)
			} else {
				t.Intent = perturb(rng, centres[f], spreadTask)
			}
			e.Tasks = append(e.Tasks, t)
			for j := 0; j < cfg.Misleading; j++ {
				e.Seed = append(e.Seed, Memory{Vec: perturb(rng, t.Intent, spreadMisleading), Q: cfg.QInit, Payload: payload('m', t.ID)})
			}
			for j := 0; j < cfg.Good; j++ {
				e.Seed = append(e.Seed, Memory{Vec: perturb(rng, t.Intent, spreadGood), Q: cfg.QInit, Payload: payload('g', t.ID)})
			}
		}
	}
	for len(e.Seed) < cfg.Memories {
		f := rng.Intn(cfg.Families)
		e.Seed = append(e.Seed, Memory{Vec: perturb(rng, centres[f], spreadDistractor), Q: cfg.QInit, Payload: []byte{'d'}})
	}
	rng.Shuffle(len(e.Seed), func(i, j int) { e.Seed[i], e.Seed[j] = e.Seed[j], e.Seed[i] })
	return e, nil
}

// Query is one episode's query for task t: its intent, perturbed.
func (e *Env) Query(rng *rand.Rand, t Task) []float32 {
	return perturb(rng, t.Intent, spreadQuery)
}

// payload encodes a memory's kind and task: what a recipe is about.
func payload(kind byte, task int) []byte {
	return strconv.AppendInt([]byte{kind}, int64(task), 10)
}

// Usefulness is how useful the memory with payload p is for task t.
func Usefulness(p []byte, t int) float64 {
	if len(p) < 2 {
		return usefulOther
	}
	own, err := strconv.Atoi(string(p[1:]))
	if err != nil || own != t {
		return usefulOther
	}
	switch p[0] {
	case 'g':
		return usefulGood
	case 'm':
		return usefulMisleading
	case 'n':
		return usefulLearned
	}
	return usefulOther
}

// SuccessProb is the probability that acting on memories of mean
// usefulness u succeeds (without noise); with no memories, successNoMemory.
func SuccessProb(u float64, used int) float64 {
	if used == 0 {
		return successNoMemory
	}
	return successBase + 0.9*u
}

// act draws the outcome of acting with success probability p plus noise.
func act(rng *rand.Rand, p float64) float64 {
	p = math.Max(0, math.Min(1, p+successNoise*rng.NormFloat64()))
	if rng.Float64() < p {
		return 1
	}
	return 0
}

func randUnit(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return normalize(v)
}

// perturb returns base plus Gaussian noise of expected length about
// spread, normalised.
func perturb(rng *rand.Rand, base []float32, spread float64) []float32 {
	v := make([]float32, len(base))
	s := spread / math.Sqrt(float64(len(base)))
	for i := range v {
		v[i] = base[i] + float32(s*rng.NormFloat64())
	}
	return normalize(v)
}

func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}
