package loop

import (
	"context"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memrl/memrl/client"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// startServer runs an in-process memrl server and returns a Store on it.
func startServer(t *testing.T) Store {
	t.Helper()
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterMem(db)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	c, err := client.New(client.Options{Addr: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ClientStore{C: c}
}

// shortOptions is the CI shape: 5,000 memories, 2 seeds.
func shortOptions(t *testing.T) Options {
	o := DefaultOptions()
	o.Env.Memories = 5000
	o.Seeds = []int64{1, 2}
	o.Logf = t.Logf
	return o
}

// TestLoopShort runs the short benchmark through an in-process server and
// asserts the directions the MemRL paper reports, over the seeds it runs:
// value-aware retrieval (λ=0.5) beats similarity alone (λ=0) by a clear
// margin, memory beats no memory, and learned Q is calibrated (success rate
// rises with the Q bin).
func TestLoopShort(t *testing.T) {
	o := shortOptions(t)
	res, err := Bench(context.Background(), startServer(t), o)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	WriteMarkdown(&sb, res.Summaries, res.Forget, o.Params)
	t.Log("\n" + sb.String())
	by := map[string]Summary{}
	for _, s := range res.Summaries {
		by[s.Label] = s
	}
	l0, l5, none := by["λ=0"], by["λ=0.5"], by["no memory"]
	if l5.Last < l0.Last+0.15 {
		t.Errorf("λ=0.5 last-epoch success %.3f, λ=0 %.3f: want a margin of at least 0.15", l5.Last, l0.Last)
	}
	if l5.Last < none.Last+0.15 {
		t.Errorf("λ=0.5 last-epoch success %.3f, no memory %.3f: want a margin of at least 0.15", l5.Last, none.Last)
	}
	if !(l5.CalibR > 0.5) {
		t.Errorf("λ=0.5 calibration r = %v, want > 0.5", l5.CalibR)
	}
	dir := t.TempDir()
	if err := WritePlots(dir, res, o.Params); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{PlotSuccess, PlotCalibration, PlotForgetting} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) < 1000 || string(b[1:4]) != "PNG" {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
	if len(res.Forget) != 2 {
		t.Fatalf("forgetting rows: %+v", res.Forget)
	}
	for _, f := range res.Forget {
		if f.Before <= none.Last {
			t.Errorf("%s: A's rate after training on A %.3f is no better than no memory %.3f", f.Label, f.Before, none.Last)
		}
	}
}

// TestEnvDisagrees: in the environment, for a task's query the most similar
// seeded memories are the misleading ones, and the right recipes are within
// the phase-1 pool, so that similarity alone picks the wrong ones.
func TestEnvDisagrees(t *testing.T) {
	o := DefaultOptions()
	o.Env.Memories = 5000
	env, err := NewEnv(o.Env, 1)
	if err != nil {
		t.Fatal(err)
	}
	st := startServer(t)
	a, err := newAgent(context.Background(), st, env, o.Params, "disagree", 0, false, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	var misTop, goodIn, n int
	for _, task := range env.Tasks {
		hits, err := st.Retrieve(context.Background(), "disagree", env.Query(a.rng, task), o.Params.K1, o.Params.K1, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range hits {
			u := Usefulness(h.Payload, task.ID)
			if i < o.Params.K2 && u == usefulMisleading {
				misTop++
			}
			if u == usefulGood {
				goodIn++
			}
		}
		n++
	}
	if share := float64(misTop) / float64(n*o.Params.K2); share < 0.9 {
		t.Errorf("misleading memories are %.2f of the top K2 by similarity, want ≥ 0.9", share)
	}
	if share := float64(goodIn) / float64(n*o.Env.Good); share < 0.8 {
		t.Errorf("right recipes in the K1 pool: %.2f, want ≥ 0.8", share)
	}
}

func TestPearsonAndSettle(t *testing.T) {
	if r := pearson([]float64{1, 2, 3}, []float64{2, 4, 6}); math.Abs(r-1) > 1e-12 {
		t.Errorf("pearson = %v, want 1", r)
	}
	if got := settleAt([]float64{-.3, -.3, .05, -.04, .3}, 2, 0.1); got != 4 {
		t.Errorf("settleAt = %v, want 4", got)
	}
	if got := settleAt([]float64{.3, .3}, 2, 0.1); !math.IsInf(got, 1) {
		t.Errorf("settleAt never = %v", got)
	}
}
