package loop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotFixture is a small made-up result: three configurations over ten
// epochs and the two forgetting rows, one of which rounds to -0.
func plotFixture() ([]Summary, []ForgetSummary) {
	var sums []Summary
	for i, label := range []string{"no memory", "λ=0", "λ=0.5"} {
		s := Summary{Config: Config{Label: label, NoMem: i == 0}, BinN: make([]int, 10), BinS: make([]int, 10), CalibR: 0.9}
		for e := range 10 {
			s.PerEpoch = append(s.PerEpoch, float64(i*e)/30)
		}
		for b := range s.BinN {
			s.BinN[b], s.BinS[b] = 100, 10*b
		}
		sums = append(sums, s)
	}
	return sums, []ForgetSummary{{Label: "z-normalised Q (λ=0.5)", Before: 0.51, After: 0.493}, {Label: "raw Q, RAWQ (λ=0.5)", Before: 0.25, After: 0.2500001}}
}

// labels returns the labels of the ticks a marks over [a.Min, a.Max].
func labels(a plot.Axis) []string {
	var out []string
	for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

// TestPlotsSayWhatTheyShow: the success plot labels every epoch, the
// calibration plot draws y = x and says what r is, and the forgetting
// bars name their numbers, forgetting included (no "-0.000"). Set
// MEMRL_PLOT_DIR to keep the PNGs to look at.
func TestPlotsSayWhatTheyShow(t *testing.T) {
	sums, forget := plotFixture()
	pl, err := successPlot(sums)
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(pl.X); strings.Join(got, " ") != "1 2 3 4 5 6 7 8 9 10" {
		t.Errorf("success plot's epoch ticks %q, want every epoch 1..10", got)
	}
	if got := labels(pl.Y); len(got) < 5 {
		t.Errorf("success plot's rate ticks %q, want at least 5", got)
	}

	pl, err = calibrationPlot(sums)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pl.Title.Text, "r: Pearson correlation") {
		t.Errorf("calibration title %q does not say what r is", pl.Title.Text)
	}
	// The y = x line is the only thing drawn in its grey: count its pixels.
	img := vgimg.New(plotW, plotH)
	pl.Draw(draw.New(img))
	grey := 0
	im := img.Image()
	for y := im.Bounds().Min.Y; y < im.Bounds().Max.Y; y++ {
		for x := im.Bounds().Min.X; x < im.Bounds().Max.X; x++ {
			if r, g, b, _ := im.At(x, y).RGBA(); r>>8 == diagGrey && g>>8 == diagGrey && b>>8 == diagGrey {
				grey++
			}
		}
	}
	if grey < 20 { // antialiased: 43 at 5×3.2 in when written
		t.Errorf("calibration plot: %d pixels of the y = x line's grey, want a line", grey)
	}

	pl, err = forgettingPlot(forget)
	if err != nil {
		t.Fatal(err)
	}
	got := labels(pl.X)
	if len(got) != 2 || !strings.Contains(got[0], "forgetting (before − after) 0.017") || !strings.Contains(got[0], "A before 0.510, after 0.493") {
		t.Errorf("forgetting bar labels %q do not name their numbers", got)
	}
	if len(got) == 2 && (strings.Contains(got[1], "-0.000") || !strings.Contains(got[1], "forgetting (before − after) 0.000")) {
		t.Errorf("forgetting label %q: want 0.000 for a rounded -0", got[1])
	}
	if !strings.Contains(pl.Y.Label.Text, "success rate") {
		t.Errorf("forgetting y label %q", pl.Y.Label.Text)
	}

	dir := os.Getenv("MEMRL_PLOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := WritePlots(dir, Result{Summaries: sums, Forget: forget}, Params{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{PlotSuccess, PlotCalibration, PlotForgetting} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", name, err)
		}
	}
}
