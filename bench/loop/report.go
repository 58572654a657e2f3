package loop

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// Config is one configuration of the report: a λ with z-normalised Q, or
// the no-memory baseline.
type Config struct {
	Label  string
	Lambda float64
	NoMem  bool
}

// Summary aggregates one configuration's runs over the seeds.
type Summary struct {
	Config
	PerEpoch   []float64 // mean over seeds
	Last       float64   // mean last-epoch rate
	Solved     float64   // mean share of tasks ever solved
	BinN, BinS []int     // summed over seeds
	CalibR     float64   // Pearson r between Q bin and success rate (bins with ≥ minBin samples); NaN if < 3 bins
	Settle     float64   // mean over seeds of episodes until Q settled; NaN if it never did in some seed
	P50, P99   time.Duration
}

// minBin is the fewest memories acted on a Q bin needs to count in the
// calibration.
const minBin = 20

func summarize(c Config, runs []*Run, p Params, episodesPerEpoch int) Summary {
	s := Summary{Config: c, PerEpoch: make([]float64, p.Epochs), BinN: make([]int, p.Bins), BinS: make([]int, p.Bins)}
	var lat []time.Duration
	settle := 0.0
	for _, r := range runs {
		for e, x := range r.PerEpoch {
			s.PerEpoch[e] += x / float64(len(runs))
		}
		s.Solved += r.Solved / float64(len(runs))
		for b := range r.BinN {
			s.BinN[b] += r.BinN[b]
			s.BinS[b] += r.BinS[b]
		}
		lat = append(lat, r.Lat...)
		settle += float64(settleAt(r.TDErr, episodesPerEpoch, p.Settle)) / float64(len(runs))
	}
	s.Last = s.PerEpoch[len(s.PerEpoch)-1]
	s.CalibR = calibration(s.BinN, s.BinS)
	s.Settle = settle
	if c.NoMem {
		s.Settle, s.CalibR = math.NaN(), math.NaN()
	}
	s.P50, s.P99 = pct(lat, 0.50), pct(lat, 0.99)
	return s
}

// settleAt is the number of rewarded episodes after which Q has settled:
// the mean TD error r − Q over the last window episodes is first within
// ±tau, so that Q predicts the reward without bias and its updates
// (α·(r − Q)) no longer drift one way. Their size never falls to 0: with
// r ∈ {0, 1} and a constant α, |ΔQ| stays near α·2p(1−p). It is +Inf if Q
// never settles.
func settleAt(td []float64, window int, tau float64) float64 {
	var sum float64
	for i, x := range td {
		sum += x
		if i >= window {
			sum -= td[i-window]
		}
		if i+1 >= window && math.Abs(sum/float64(window)) < tau {
			return float64(i + 1)
		}
	}
	return math.Inf(1)
}

// calibration is the Pearson correlation between a Q bin's centre and the
// success rate of the episodes that acted on memories in it, over the bins
// with at least minBin samples.
func calibration(n, s []int) float64 {
	var xs, ys []float64
	for b := range n {
		if n[b] >= minBin {
			xs = append(xs, (float64(b)+0.5)/float64(len(n)))
			ys = append(ys, float64(s[b])/float64(n[b]))
		}
	}
	if len(xs) < 3 {
		return math.NaN()
	}
	return pearson(xs, ys)
}

func pearson(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	return d[min(len(d)-1, int(p*float64(len(d))))]
}

// ForgetSummary is a forgetting configuration's means over the seeds.
type ForgetSummary struct {
	Label                string
	Before, After, BRate float64
}

// Forgetting is A's rate before minus after.
func (f ForgetSummary) Forgetting() float64 { return f.Before - f.After }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// num3 formats a rate or a difference of rates to 3 places, a difference
// that rounds to zero as 0.000 rather than -0.000.
func num3(x float64) string {
	s := fmt.Sprintf("%.3f", x)
	if s == "-0.000" {
		return "0.000"
	}
	return s
}

func num2(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	if math.IsInf(x, 1) {
		return "never"
	}
	return fmt.Sprintf("%.2f", x)
}

// WriteMarkdown writes the report's tables.
func WriteMarkdown(w io.Writer, sums []Summary, forget []ForgetSummary, p Params) {
	fmt.Fprintf(w, "| config | last-epoch success | tasks ever solved | Q calibration r | episodes until Q settles | retrieve p50 ms | p99 ms |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|\n")
	for _, s := range sums {
		settle := "–"
		if !s.NoMem {
			settle = num2(s.Settle)
			if !math.IsInf(s.Settle, 1) {
				settle = fmt.Sprintf("%.0f", s.Settle)
			}
		}
		p50, p99 := "–", "–"
		if !s.NoMem {
			p50, p99 = fmt.Sprintf("%.2f", ms(s.P50)), fmt.Sprintf("%.2f", ms(s.P99))
		}
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %s | %s | %s | %s |\n", s.Label, s.Last, s.Solved, num2(s.CalibR), settle, p50, p99)
	}
	fmt.Fprintf(w, "\nSuccess per epoch:\n\n| config |")
	for e := range p.Epochs {
		fmt.Fprintf(w, " %d |", e+1)
	}
	fmt.Fprintf(w, "\n|---|%s\n", repeat("---|", p.Epochs))
	for _, s := range sums {
		fmt.Fprintf(w, "| %s |", s.Label)
		for _, x := range s.PerEpoch {
			fmt.Fprintf(w, " %.3f |", x)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nQ calibration (all λ > 0 pooled; memories acted on, by Q at retrieval):\n\n| Q bin | memories | success rate |\n|---|---|---|\n")
	n, sc := make([]int, p.Bins), make([]int, p.Bins)
	for _, s := range sums {
		if s.NoMem || s.Lambda == 0 {
			continue
		}
		for b := range n {
			n[b] += s.BinN[b]
			sc[b] += s.BinS[b]
		}
	}
	for b := range n {
		rate := "–"
		if n[b] > 0 {
			rate = fmt.Sprintf("%.3f", float64(sc[b])/float64(n[b]))
		}
		fmt.Fprintf(w, "| %.1f–%.1f | %d | %s |\n", float64(b)/float64(p.Bins), float64(b+1)/float64(p.Bins), n[b], rate)
	}
	fmt.Fprintf(w, "\nPooled calibration r (bins with ≥ %d): %s\n", minBin, num2(calibration(n, sc)))
	if len(forget) > 0 {
		fmt.Fprintf(w, "\nForgetting (train A, evaluate A, train B, evaluate A):\n\n| ranking | A before | A after | forgetting | B last epoch |\n|---|---|---|---|---|\n")
		for _, f := range forget {
			fmt.Fprintf(w, "| %s | %.3f | %.3f | %s | %.3f |\n", f.Label, f.Before, f.After, num3(f.Forgetting()), f.BRate)
		}
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}
