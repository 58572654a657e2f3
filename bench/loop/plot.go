package loop

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot file names, written by WritePlots.
const (
	PlotSuccess     = "loop_success.png"
	PlotCalibration = "loop_calibration.png"
	PlotForgetting  = "loop_forgetting.png"
)

// plotW and plotH keep the committed PNGs small.
const plotW, plotH = 5 * vg.Inch, 3.2 * vg.Inch

// WritePlots writes three PNGs into dir: success per epoch per
// configuration, success rate per Q bin (each λ > 0), and A's rate before
// and after training on B, with z-normalised and raw Q.
func WritePlots(dir string, res Result, p Params) error {
	pl, err := successPlot(res.Summaries)
	if err == nil {
		err = pl.Save(plotW, plotH, filepath.Join(dir, PlotSuccess))
	}
	if err != nil {
		return err
	}
	if pl, err = calibrationPlot(res.Summaries); err == nil {
		err = pl.Save(plotW, plotH, filepath.Join(dir, PlotCalibration))
	}
	if err != nil || len(res.Forget) == 0 {
		return err
	}
	if pl, err = forgettingPlot(res.Forget); err != nil {
		return err
	}
	return pl.Save(plotW, plotH, filepath.Join(dir, PlotForgetting))
}

// epochTicks labels every epoch 1..n: the default ticker labels only a
// few round numbers (2, 6, 10), which leaves most points unnamed.
func epochTicks(n int) plot.ConstantTicks {
	ts := make(plot.ConstantTicks, n)
	for e := range n {
		ts[e] = plot.Tick{Value: float64(e + 1), Label: strconv.Itoa(e + 1)}
	}
	return ts
}

// unitTicks marks [0, 1] every 0.1 and labels every 0.2, for rates and Q.
func unitTicks() plot.ConstantTicks {
	var ts plot.ConstantTicks
	for i := 0; i <= 10; i++ {
		t := plot.Tick{Value: float64(i) / 10}
		if i%2 == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', 1, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// lightGrid is a faint grid at the major ticks, to read values off.
func lightGrid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 220}
	g.Horizontal.Color = color.Gray{Y: 220}
	return g
}

func successPlot(sums []Summary) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = "Success rate per epoch"
	pl.X.Label.Text = "epoch"
	pl.Y.Label.Text = "success rate"
	pl.Y.Min, pl.Y.Max = 0, 1
	pl.Y.Tick.Marker = unitTicks()
	epochs := 0
	var lines []any
	for _, s := range sums {
		xys := make(plotter.XYs, len(s.PerEpoch))
		for e, x := range s.PerEpoch {
			xys[e] = plotter.XY{X: float64(e + 1), Y: x}
		}
		epochs = max(epochs, len(s.PerEpoch))
		lines = append(lines, s.Label, xys)
	}
	pl.X.Tick.Marker = epochTicks(epochs)
	pl.X.Min, pl.X.Max = 0.5, float64(epochs)+0.5
	pl.Add(lightGrid())
	if err := plotutil.AddLinePoints(pl, lines...); err != nil {
		return nil, err
	}
	pl.Legend.Top = true
	pl.Legend.Left = true
	return pl, nil
}

// diagGrey is the y = x line's grey, used by nothing else.
const diagGrey = 120

// calibrationCaption says what the legend's r is; the plot has no room
// for a longer note (bench/README.md has the method).
const calibrationCaption = "r: Pearson correlation of Q bin centre and success rate"

func calibrationPlot(sums []Summary) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = "Success rate by Q bin (memories acted on)\n" + calibrationCaption
	pl.X.Label.Text = fmt.Sprintf("Q at retrieval (bin centre; bins with ≥ %d memories)", minBin)
	pl.Y.Label.Text = "success rate"
	pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = 0, 1, 0, 1
	pl.X.Tick.Marker, pl.Y.Tick.Marker = unitTicks(), unitTicks()
	pl.Add(lightGrid())
	// Perfect calibration: a memory of Q q succeeds with probability q.
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return nil, err
	}
	diag.Color = color.Gray{Y: diagGrey}
	diag.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	pl.Add(diag)
	pl.Legend.Add("y = x (Q = success rate)", diag)
	var lines []any
	for _, s := range sums {
		if s.NoMem {
			continue
		}
		var xys plotter.XYs
		for b := range s.BinN {
			if s.BinN[b] >= minBin {
				xys = append(xys, plotter.XY{X: (float64(b) + 0.5) / float64(len(s.BinN)), Y: float64(s.BinS[b]) / float64(s.BinN[b])})
			}
		}
		if len(xys) > 0 {
			lines = append(lines, fmt.Sprintf("%s (r=%s)", s.Label, num2(s.CalibR)), xys)
		}
	}
	if err := plotutil.AddLinePoints(pl, lines...); err != nil {
		return nil, err
	}
	pl.Legend.Top = true
	pl.Legend.Left = true
	return pl, nil
}

// forgettingLabel names a pair of bars with its three numbers; forgetting
// is A's rate before minus after (positive: B's training cost A).
func forgettingLabel(f ForgetSummary) string {
	return fmt.Sprintf("%s\nA before %.3f, after %.3f\nforgetting (before − after) %s", f.Label, f.Before, f.After, num3(f.Forgetting()))
}

func forgettingPlot(fs []ForgetSummary) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = "Forgetting: A's success before and after training on B"
	pl.Y.Label.Text = "A's success rate"
	pl.Y.Min, pl.Y.Max = 0, 1
	pl.Y.Tick.Marker = unitTicks()
	before, after := make(plotter.Values, len(fs)), make(plotter.Values, len(fs))
	names := make([]string, len(fs))
	for i, f := range fs {
		before[i], after[i] = f.Before, f.After
		names[i] = forgettingLabel(f)
	}
	w := vg.Points(30)
	b1, err := plotter.NewBarChart(before, w)
	if err != nil {
		return nil, err
	}
	b1.Color = color.RGBA{R: 70, G: 110, B: 200, A: 255}
	b1.Offset = -w / 2
	b2, err := plotter.NewBarChart(after, w)
	if err != nil {
		return nil, err
	}
	b2.Color = color.RGBA{R: 220, G: 120, B: 60, A: 255}
	b2.Offset = w / 2
	pl.Add(lightGrid(), b1, b2)
	pl.Legend.Add("before: after training on A", b1)
	pl.Legend.Add("after: then training on B", b2)
	pl.Legend.Top = true
	pl.NominalX(names...)
	return pl, nil
}
