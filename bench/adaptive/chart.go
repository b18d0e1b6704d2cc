package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colors of the Okabe–Ito palette, told apart also with a colour vision
// deficiency; the capacity is grey.
var (
	limitColor    = color.RGBA{0x00, 0x72, 0xb2, 0xff} // blue
	inFlightColor = color.RGBA{0xe6, 0x9f, 0x00, 0xff} // orange
	grey          = color.Gray{0xaa}                   // light, so that a line drawn over it stays visible
)

// chartCols is the number of panels per row.
const chartCols = 4

// chart writes to path, as a PNG, one panel per strategy (small multiples, on
// one scale): its limit and the requests in flight at the backend, sampled
// every 100ms, over the backend's capacity, in the first run. Values above the
// scale are drawn at its top.
func chart(path string, sc scenario, all []namedStrategy, rs []result, clock string) error {
	if len(all) == 0 {
		return fmt.Errorf("chart: no strategy to draw")
	}
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	total := sc.runLen()
	var ticks plot.ConstantTicks // at the phase boundaries, where the grid's vertical lines fall
	for p := 0; p <= len(sc.phases); p++ {
		s := (sc.phaseLen * time.Duration(p)).Seconds()
		ticks = append(ticks, plot.Tick{Value: s, Label: strconv.FormatFloat(s, 'f', -1, 64)})
	}
	top := 0
	for _, p := range sc.phases {
		top = max(top, p.capacity)
	}
	yt, ymax := yTicks(2.5 * float64(top))

	leg := plot.NewLegend()
	leg.ThumbnailWidth = vg.Points(24)
	var panels []*plot.Plot
	for i, s := range all {
		p := plot.New()
		p.Title.Text = s.name
		p.X.Min, p.X.Max = 0, total.Seconds()
		p.X.Tick.Marker = ticks
		p.Y.Min, p.Y.Max = 0, ymax
		p.Y.Tick.Marker = yt
		p.Add(plotter.NewGrid())
		capacity := step(sc, func(p phase) float64 { return float64(p.capacity) })
		capacity.LineStyle = draw.LineStyle{Color: grey, Width: vg.Points(4)}
		inFlight := series(rs[i].inFlight, ymax)
		inFlight.LineStyle = draw.LineStyle{Color: inFlightColor, Width: vg.Points(1)}
		limit := series(rs[i].limits, ymax)
		limit.LineStyle = draw.LineStyle{Color: limitColor, Width: vg.Points(1.75)}
		p.Add(capacity, inFlight, limit)
		if i == 0 {
			leg.Add("limit", limit)
			leg.Add("requests in flight at the backend", inFlight)
			leg.Add("backend capacity", capacity)
		}
		panels = append(panels, p)
	}

	const dpi = 96
	rows := (len(panels) + chartCols - 1) / chartCols
	width := 16 * vg.Inch
	rowHeight, header, legendWidth := 2.3*vg.Inch, 0.95*vg.Inch, 3.2*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(width, rowHeight*vg.Length(rows)+header), vgimg.UseDPI(dpi),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	title := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 15), Handler: plot.DefaultTextHandler}
	sub := title
	sub.Font = font.From(plot.DefaultFont, 11)
	dc.FillText(title, vg.Point{X: vg.Points(12), Y: dc.Max.Y - vg.Points(22)},
		fmt.Sprintf("Scenario %s: limit and requests in flight at the backend against its capacity, per strategy (first run, %s)", sc.name, clock))
	var caps, loads []string
	for _, p := range sc.phases {
		caps = append(caps, fmt.Sprintf("%d at %v", p.capacity, p.base))
		loads = append(loads, fmt.Sprintf("%.0f/s", p.rate))
	}
	dc.FillText(sub, vg.Point{X: vg.Points(12), Y: dc.Max.Y - vg.Points(40)}, fmt.Sprintf(
		"Behind %s: capacity %s per phase of %v (the grid's vertical lines; time in seconds); arrivals %s.",
		sc.server, strings.Join(caps, ", "), sc.phaseLen, strings.Join(loads, ", ")))
	dc.FillText(sub, vg.Point{X: vg.Points(12), Y: dc.Max.Y - vg.Points(55)}, fmt.Sprintf(
		"Deadline %v, queue budget %v. Sampled every 100ms; values above %.0f are drawn at %.0f.", sc.deadline, sc.queueBudget, ymax, ymax))
	legArea := draw.Crop(dc, dc.Max.X-dc.Min.X-legendWidth, 0, dc.Max.Y-dc.Min.Y-header+vg.Points(8), -vg.Points(8))
	leg.Top, leg.Left = true, true
	leg.Draw(legArea)
	body := draw.Crop(dc, 0, 0, 0, -header)
	tiles := draw.Tiles{Rows: rows, Cols: chartCols, PadX: vg.Points(14), PadY: vg.Points(12),
		PadLeft: vg.Points(6), PadRight: vg.Points(6), PadBottom: vg.Points(6)}
	for i, p := range panels {
		p.Draw(tiles.At(body, i%chartCols, i/chartCols))
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
// round step apart, and the axis' maximum: the last tick.
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
	return t, last
}

// line is a line through pts, which are finite by construction.
func line(pts plotter.XYs) *plotter.Line {
	l, err := plotter.NewLine(pts)
	if err != nil {
		panic(fmt.Sprintf("chart: line through %v: %v", pts, err))
	}
	return l
}

// series is a per-bucket series, each value at its bucket's end, clipped at
// top.
func series(v []int, top float64) *plotter.Line {
	pts := make(plotter.XYs, len(v))
	for k, x := range v {
		pts[k] = plotter.XY{X: (time.Duration(k+1) * bucket).Seconds(), Y: min(float64(x), top)}
	}
	return line(pts)
}

// step is the staircase of a phase's value over the run.
func step(sc scenario, v func(phase) float64) *plotter.Line {
	var pts plotter.XYs
	for p, ph := range sc.phases {
		pts = append(pts, plotter.XY{X: (sc.phaseLen * time.Duration(p)).Seconds(), Y: v(ph)},
			plotter.XY{X: (sc.phaseLen * time.Duration(p+1)).Seconds(), Y: v(ph)})
	}
	return line(pts)
}
