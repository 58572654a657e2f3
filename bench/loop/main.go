package loop

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/memrl/memrl/bench/rewards"
	"github.com/memrl/memrl/client"
	"github.com/memrl/memrl/internal/cliflag"
)

// Options are a whole benchmark's shape.
type Options struct {
	Env     EnvConfig
	Params  Params
	Lambdas []float64
	Seeds   []int64
	Forget  bool    // run the forgetting comparison
	ForgetL float64 // λ of the forgetting runs
	Logf    func(format string, args ...any)
}

// DefaultOptions is the full run: 100,000 memories, 100 tasks, 10 epochs,
// 3 seeds.
func DefaultOptions() Options {
	return Options{
		Env: EnvConfig{Dim: 32, Families: 10, TasksPerFamily: 10, Misleading: 5, Good: 3,
			Memories: 100000, QInit: 0.5},
		Params: Params{Epochs: 10, K1: 16, K2: 3, Epsilon: 0.1, Alpha: 0.3, QInit: 0.5, QNew: 0.5,
			Settle: 0.05, Bins: 10},
		Lambdas: []float64{0, 0.25, 0.5, 0.75, 1},
		Seeds:   []int64{1, 2, 3},
		Forget:  true, ForgetL: 0.5,
	}
}

// Result is a whole benchmark's outcome.
type Result struct {
	Summaries []Summary
	Forget    []ForgetSummary
}

// Bench runs every configuration against the server st talks to.
func Bench(ctx context.Context, st Store, o Options) (Result, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	configs := []Config{{Label: "no memory", NoMem: true}}
	for _, l := range o.Lambdas {
		configs = append(configs, Config{Label: fmt.Sprintf("λ=%g", l), Lambda: l})
	}
	runs := make([][]*Run, len(configs))
	fz, fr := ForgetSummary{Label: fmt.Sprintf("z-normalised Q (λ=%g)", o.ForgetL)}, ForgetSummary{Label: fmt.Sprintf("raw Q, RAWQ (λ=%g)", o.ForgetL)}
	n := float64(len(o.Seeds))
	for _, seed := range o.Seeds {
		env, err := NewEnv(o.Env, seed)
		if err != nil {
			return Result{}, err
		}
		for i, c := range configs {
			t0 := time.Now()
			r, err := Train(ctx, st, env, o.Params, fmt.Sprintf("bench_loop_%d_%d", seed, i), c.Lambda, false, c.NoMem, seed)
			if err != nil {
				return Result{}, err
			}
			runs[i] = append(runs[i], r)
			logf("seed %d %s: last epoch %.3f (%.1fs)", seed, c.Label, r.PerEpoch[len(r.PerEpoch)-1], time.Since(t0).Seconds())
		}
		if !o.Forget {
			continue
		}
		for _, raw := range []bool{false, true} {
			f, _, err := Forget(ctx, st, env, o.Params, fmt.Sprintf("bench_loop_%d_forget_%v", seed, raw), o.ForgetL, raw, seed)
			if err != nil {
				return Result{}, err
			}
			dst := &fz
			if raw {
				dst = &fr
			}
			dst.Before += f.Before / n
			dst.After += f.After / n
			dst.BRate += f.BRate / n
			logf("seed %d forgetting raw=%v: A %.3f → %.3f", seed, raw, f.Before, f.After)
		}
	}
	var res Result
	for i, c := range configs {
		res.Summaries = append(res.Summaries, summarize(c, runs[i], o.Params, o.Env.Families*o.Env.TasksPerFamily))
	}
	if o.Forget {
		res.Forget = []ForgetSummary{fz, fr}
	}
	return res, nil
}

// Main runs the benchmark with command-line args, writing the report to out.
func Main(args []string, out io.Writer) error {
	o := DefaultOptions()
	fs := flag.NewFlagSet("bench loop", flag.ContinueOnError)
	addr := fs.String("addr", "", "server to run against; empty starts memrl serve --sync none on a temporary folder")
	fs.IntVar(&o.Env.Memories, "memories", o.Env.Memories, "memories seeded per collection (recipes plus distractors)")
	fs.IntVar(&o.Env.Families, "families", o.Env.Families, "task families (even ones are A, odd ones B in the forgetting run)")
	fs.IntVar(&o.Env.TasksPerFamily, "tasks", o.Env.TasksPerFamily, "tasks per family")
	fs.IntVar(&o.Params.Epochs, "epochs", o.Params.Epochs, "training epochs (each task once per epoch)")
	seeds := fs.String("seeds", "1,2,3", "seeds, comma-separated: each its own environment and agent")
	lambdas := fs.String("lambdas", "0,0.25,0.5,0.75,1", "λ values, comma-separated")
	fs.IntVar(&o.Params.K1, "k1", o.Params.K1, "phase-1 pool (MEM.RETRIEVE K1)")
	fs.IntVar(&o.Params.K2, "k2", o.Params.K2, "memories acted on")
	fs.Float64Var(&o.Params.Epsilon, "epsilon", o.Params.Epsilon, "ε-greedy exploration")
	fs.Float64Var(&o.Params.Settle, "settle", o.Params.Settle, "Q has settled when |mean(r − Q)| over an epoch's worth of rewarded episodes is below this")
	fs.StringVar(&o.Params.Index, "index", "", "the collections' INDEX: empty for the server's default (IVFPQ, approximate past 10,000 memories), or FLAT (exact; runs repeat exactly)")
	short := fs.Bool("short", false, "the CI shape: 5,000 memories, 2 seeds")
	outFile := fs.String("out", "", "write the Markdown report here instead of stdout")
	plots := fs.String("plots", "", "folder to write loop_success.png, loop_calibration.png and loop_forgetting.png to; empty: none")
	if err := cliflag.Parse(fs, args, 0); err != nil {
		return err
	}
	if *short {
		o.Env.Memories, *seeds = 5000, "1,2"
	}
	var err error
	if o.Seeds, err = parseList(*seeds, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }); err != nil {
		return cliflag.Usagef("--seeds: %v", err)
	}
	if o.Lambdas, err = parseList(*lambdas, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return cliflag.Usagef("--lambdas: %v", err)
	}
	if o.Params.Epochs < 1 || o.Params.K1 < 1 || o.Params.K2 < 1 || o.Params.K2 > o.Params.K1 || o.Env.Families < 2 || o.Env.TasksPerFamily < 1 {
		return cliflag.Usagef("need --epochs ≥ 1, 1 ≤ --k2 ≤ --k1, --families ≥ 2, --tasks ≥ 1")
	}
	o.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	a := *addr
	if a == "" {
		var stop func()
		if a, stop, err = rewards.StartServer("none"); err != nil {
			return err
		}
		defer stop()
	}
	c, err := client.New(client.Options{Addr: a})
	if err != nil {
		return err
	}
	defer c.Close()
	t0 := time.Now()
	res, err := Bench(context.Background(), ClientStore{C: c}, o)
	if err != nil {
		return err
	}
	w := out
	if *outFile != "" {
		f, err := os.Create(*outFile)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	index := o.Params.Index
	if index == "" {
		index = "default"
	}
	fmt.Fprintf(w, "memrl bench loop: %d memories, INDEX %s, %d tasks in %d families, %d epochs, K1 %d, K2 %d, ε %g, seeds %s (%.0fs)\n\n",
		o.Env.Memories, index, o.Env.Families*o.Env.TasksPerFamily, o.Env.Families, o.Params.Epochs, o.Params.K1, o.Params.K2, o.Params.Epsilon, *seeds, time.Since(t0).Seconds())
	WriteMarkdown(w, res.Summaries, res.Forget, o.Params)
	if *plots != "" {
		return WritePlots(*plots, res, o.Params)
	}
	return nil
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
