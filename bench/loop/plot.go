package loop

import (
	"fmt"
	"image/color"
	"path/filepath"

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
	if err := plotSuccess(filepath.Join(dir, PlotSuccess), res.Summaries); err != nil {
		return err
	}
	if err := plotCalibration(filepath.Join(dir, PlotCalibration), res.Summaries); err != nil {
		return err
	}
	if len(res.Forget) == 0 {
		return nil
	}
	return plotForgetting(filepath.Join(dir, PlotForgetting), res.Forget)
}

func plotSuccess(path string, sums []Summary) error {
	pl := plot.New()
	pl.Title.Text = "Success rate per epoch"
	pl.X.Label.Text = "epoch"
	pl.Y.Label.Text = "success rate"
	pl.Y.Min, pl.Y.Max = 0, 1
	var lines []any
	for _, s := range sums {
		xys := make(plotter.XYs, len(s.PerEpoch))
		for e, x := range s.PerEpoch {
			xys[e] = plotter.XY{X: float64(e + 1), Y: x}
		}
		lines = append(lines, s.Label, xys)
	}
	if err := plotutil.AddLinePoints(pl, lines...); err != nil {
		return err
	}
	pl.Legend.Top = true
	pl.Legend.Left = true
	return pl.Save(plotW, plotH, path)
}

func plotCalibration(path string, sums []Summary) error {
	pl := plot.New()
	pl.Title.Text = "Success rate by Q bin (memories acted on)"
	pl.X.Label.Text = "Q at retrieval (bin centre)"
	pl.Y.Label.Text = "success rate"
	pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = 0, 1, 0, 1
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
		return err
	}
	pl.Legend.Top = true
	pl.Legend.Left = true
	return pl.Save(plotW, plotH, path)
}

func plotForgetting(path string, fs []ForgetSummary) error {
	pl := plot.New()
	pl.Title.Text = "Forgetting: A's success before and after training on B"
	pl.Y.Label.Text = "A's success rate"
	pl.Y.Min, pl.Y.Max = 0, 1
	before, after := make(plotter.Values, len(fs)), make(plotter.Values, len(fs))
	names := make([]string, len(fs))
	for i, f := range fs {
		before[i], after[i] = f.Before, f.After
		names[i] = fmt.Sprintf("%s: %.3f", f.Label, f.Forgetting())
	}
	w := vg.Points(30)
	b1, err := plotter.NewBarChart(before, w)
	if err != nil {
		return err
	}
	b1.Color = color.RGBA{R: 70, G: 110, B: 200, A: 255}
	b1.Offset = -w / 2
	b2, err := plotter.NewBarChart(after, w)
	if err != nil {
		return err
	}
	b2.Color = color.RGBA{R: 220, G: 120, B: 60, A: 255}
	b2.Offset = w / 2
	pl.Add(b1, b2)
	pl.Legend.Add("after A", b1)
	pl.Legend.Add("after A, then B", b2)
	pl.Legend.Top = true
	pl.NominalX(names...)
	return pl.Save(plotW, plotH, path)
}
