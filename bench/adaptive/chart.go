package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colors of the Okabe–Ito palette, told apart also with a colour vision
// deficiency; the references are grey.
var (
	palette = []color.Color{
		color.RGBA{0x00, 0x72, 0xb2, 0xff}, // blue
		color.RGBA{0xd5, 0x5e, 0x00, 0xff}, // vermilion
		color.RGBA{0x00, 0x9e, 0x73, 0xff}, // bluish green
		color.RGBA{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
		color.RGBA{0xe6, 0x9f, 0x00, 0xff}, // orange
	}
	grey = color.Gray{0xaa} // light, so that a strategy's line drawn over it stays visible
)

// row is one row of the chart: strategies drawn together.
type row struct {
	title string
	idx   []int // into the strategies
}

// rows groups the strategies of one family on a row, in their order: the
// static limits with FIFO waiting, those with the standing-queue policy, each
// of our algorithms with both, failsafe-go's two.
func rows(all []namedStrategy) []row {
	var out []row
	at := map[string]int{}
	for i, s := range all {
		title := s.family
		k, ok := at[title]
		if !ok {
			k = len(out)
			at[title] = k
			out = append(out, row{title: title})
		}
		out[k].idx = append(out[k].idx, i)
	}
	return out
}

// chart writes to path, as a PNG, every strategy's limit (left, with the
// backend's capacity) and p99 latency of the requests served in each 100ms
// (right, with the backend's base latency and the deadline) over the first
// run, one row per family of strategies.
func chart(path string, all []namedStrategy, rs []result, phaseLen time.Duration) error {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	total := phaseLen * time.Duration(len(phases))
	var ticks plot.ConstantTicks // at the phase boundaries, where the grid's vertical lines fall
	for p := 0; p <= len(phases); p++ {
		s := (phaseLen * time.Duration(p)).Seconds()
		ticks = append(ticks, plot.Tick{Value: s, Label: strconv.FormatFloat(s, 'f', -1, 64)})
	}
	msTicks, msMax := yTicks(ms(*deadline))

	var plots [][]*plot.Plot
	var legends []plot.Legend
	for ri, r := range rows(all) {
		lim, lat := plot.New(), plot.New()
		for _, p := range []*plot.Plot{lim, lat} {
			p.X.Min, p.X.Max = 0, total.Seconds()
			p.X.Tick.Marker = ticks
			p.X.Label.Text = "time (s, simulated)"
			p.Add(plotter.NewGrid())
		}
		lim.Title.Text = r.title + ": limit"
		lim.Y.Label.Text = "limit (calls in flight)"
		lim.Y.Min = 0
		lat.Title.Text = r.title + ": p99 latency of the requests served"
		lat.Y.Label.Text = "p99 per 100ms (ms)"
		lat.Y.Tick.Marker = msTicks
		lat.Y.Min, lat.Y.Max = 0, msMax

		leg := plot.NewLegend()
		leg.Top, leg.Left = true, true
		leg.ThumbnailWidth = vg.Points(28)
		capacity := step(phaseLen, func(p phase) float64 { return float64(p.capacity) })
		capacity.LineStyle = draw.LineStyle{Color: grey, Width: vg.Points(4)}
		base := step(phaseLen, func(p phase) float64 { return ms(p.base) })
		base.LineStyle = capacity.LineStyle
		dl := line(plotter.XYs{{X: 0, Y: ms(*deadline)}, {X: total.Seconds(), Y: ms(*deadline)}})
		dl.LineStyle = draw.LineStyle{Color: grey, Width: vg.Points(2), Dashes: []vg.Length{vg.Points(2), vg.Points(3)}}
		lim.Add(capacity)
		lat.Add(base, dl)

		maxLimit := 0
		for j, i := range r.idx {
			sty := draw.LineStyle{Color: palette[j%len(palette)], Width: vg.Points(2)}
			if len(r.idx) > 2 { // thinner, where up to five noisy lines cross
				sty.Width = vg.Points(1.25)
			}
			if len(r.idx) == 2 && j == 0 { // FIFO against +codel, or failsafe-go's defaults against tuned
				sty.Dashes = []vg.Length{vg.Points(7), vg.Points(3)}
			}
			pts := make(plotter.XYs, len(rs[i].limits))
			for k, l := range rs[i].limits { // sampled at the end of bucket k
				pts[k] = plotter.XY{X: (time.Duration(k+1) * bucket).Seconds(), Y: float64(l)}
				maxLimit = max(maxLimit, l)
			}
			l := line(pts)
			l.LineStyle = sty
			lim.Add(l)
			for _, seg := range p99Segments(rs[i].p99, msMax) {
				s := line(seg)
				s.LineStyle = sty
				lat.Add(s)
			}
			leg.Add(all[i].name, l)
		}
		lim.Y.Tick.Marker, lim.Y.Max = yTicks(float64(max(maxLimit, int(slices.Max(staticLimits))))) // no row below the static ones
		if ri == 0 {
			leg.Add("backend capacity (left)", capacity)
			leg.Add("base latency (right)", base)
			leg.Add("deadline (right)", dl)
		}
		plots = append(plots, []*plot.Plot{lim, lat})
		legends = append(legends, leg)
	}
	if len(plots) == 0 {
		return fmt.Errorf("chart: no strategy to draw")
	}

	const dpi = 96
	width := 13 * vg.Inch
	rowHeight, header, legendWidth := 2.6*vg.Inch, 0.85*vg.Inch, 2.4*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(width, rowHeight*vg.Length(len(plots))+header), vgimg.UseDPI(dpi),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)

	title := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 15), Handler: plot.DefaultTextHandler}
	sub := title
	sub.Font = font.From(plot.DefaultFont, 11)
	dc.FillText(title, vg.Point{X: vg.Points(12), Y: dc.Max.Y - vg.Points(22)},
		"Limit and p99 latency over time, per strategy (first run, simulated time)")
	dc.FillText(sub, vg.Point{X: vg.Points(12), Y: dc.Max.Y - vg.Points(40)}, fmt.Sprintf(
		"Backend capacity %v calls, base latency %v per phase of %v; %.0f arrivals/s (Poisson); deadline %v.",
		caps(), bases(), phaseLen, *rate, *deadline))
	dc.FillText(sub, vg.Point{X: vg.Points(12), Y: dc.Max.Y - vg.Points(55)},
		"p99: of the latencies, from arrival, of the requests served in each 100ms; a gap is 100ms in which none was. The grid's vertical lines are the phase boundaries.")

	body := draw.Crop(dc, 0, -legendWidth, 0, -header)
	tiles := draw.Tiles{Rows: len(plots), Cols: 2, PadX: vg.Points(18), PadY: vg.Points(14),
		PadLeft: vg.Points(6), PadBottom: vg.Points(6)}
	for j, r := range plots {
		for i, p := range r {
			p.Draw(tiles.At(body, i, j))
		}
		c := tiles.At(body, 1, j)
		c.Min.X, c.Max.X = c.Max.X+vg.Points(14), dc.Max.X
		c.Max.Y -= vg.Points(18) // below the panels' titles
		legends[j].Draw(c)
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// yTicks returns labelled ticks from 0 to at least top, at most 6 of them a
// round step apart, and the axis' maximum: a tenth above the last tick, so
// that its label, as the data, stays inside the panel in every panel alike.
func yTicks(top float64) (plot.ConstantTicks, float64) {
	step := 1.0
	for i := 0; top/step > 5; i++ {
		step *= []float64{2, 2.5, 2}[i%3] // 1, 2, 5, 10, 20, 50, ...
	}
	last := math.Ceil(top/step) * step
	var t plot.ConstantTicks
	for v := 0.0; v <= last; v += step {
		t = append(t, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return t, last * 1.1
}

// line is a line through pts, which are finite by construction.
func line(pts plotter.XYs) *plotter.Line {
	l, err := plotter.NewLine(pts)
	if err != nil {
		panic(fmt.Sprintf("chart: line through %v: %v", pts, err))
	}
	return l
}

// step is the staircase of a phase's value over the run.
func step(phaseLen time.Duration, v func(phase) float64) *plotter.Line {
	var pts plotter.XYs
	for p, ph := range phases {
		pts = append(pts, plotter.XY{X: (phaseLen * time.Duration(p)).Seconds(), Y: v(ph)},
			plotter.XY{X: (phaseLen * time.Duration(p+1)).Seconds(), Y: v(ph)})
	}
	return line(pts)
}

// p99Segments returns the p99 per bucket, at the bucket's middle, in runs of
// buckets where something was served; values above top (ms) are drawn at top.
func p99Segments(p99 []time.Duration, top float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for k, d := range p99 {
		if d == 0 {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, plotter.XY{X: (time.Duration(k)*bucket + bucket/2).Seconds(), Y: min(ms(d), top)})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
