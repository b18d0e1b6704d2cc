package main

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colors of the Okabe–Ito palette, told apart also with a colour vision
// deficiency; the limit and the guarantee are grey.
var (
	palette = []color.Color{
		color.RGBA{0x00, 0x72, 0xb2, 0xff}, // blue
		color.RGBA{0xd5, 0x5e, 0x00, 0xff}, // vermilion
		color.RGBA{0x00, 0x9e, 0x73, 0xff}, // bluish green
		color.RGBA{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	}
	grey = color.Gray{0x99}
)

// chart writes to path, as a PNG, the units each tenant held over time in the
// scenarios "weighted" and "return", one panel per limiter, from the outcomes
// of one run.
func chart(path string, rs []outcome) error {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	var cols [][]*plot.Plot
	for _, name := range []string{"weighted", "return"} {
		var col []*plot.Plot
		for _, o := range rs {
			if o.scenario != name {
				continue
			}
			p := plot.New()
			p.Title.Text = name + ": " + o.limiter
			p.X.Label.Text = "seconds"
			p.Y.Label.Text = "units held"
			p.Y.Min, p.Y.Max = 0, float64(*limitN)*1.15
			p.X.Min, p.X.Max = 0, length.Seconds()
			p.Add(plotter.NewGrid())
			lim := line(plotter.XYs{{X: 0, Y: float64(*limitN)}, {X: length.Seconds(), Y: float64(*limitN)}})
			lim.Color, lim.Dashes = grey, []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(lim)
			p.Legend.Add("limit", lim)
			for k, t := range o.tenants {
				var pts plotter.XYs
				for i, row := range o.samples {
					pts = append(pts, plotter.XY{X: o.sampledAt[i].Seconds(), Y: float64(row[k])})
				}
				l := line(pts)
				l.Color, l.Width = palette[k%len(palette)], vg.Points(1.2)
				p.Add(l)
				label := fmt.Sprintf("%s (weight %d", t.name, t.weight)
				if t.guarantee > 0 {
					label += fmt.Sprintf(", guarantee %d", t.guarantee)
				}
				p.Legend.Add(label+")", l)
			}
			p.Legend.Top = true
			col = append(col, p)
		}
		cols = append(cols, col)
	}
	if len(cols[0]) == 0 {
		return fmt.Errorf("chart: nothing to draw")
	}
	const dpi = 96
	rowsN := len(cols[0])
	width, rowHeight, header := 14*vg.Inch, 2.8*vg.Inch, 0.6*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(width, rowHeight*vg.Length(rowsN)+header), vgimg.UseDPI(dpi),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	title := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 15), Handler: plot.DefaultTextHandler}
	dc.FillText(title, vg.Point{X: vg.Points(12), Y: dc.Max.Y - vg.Points(24)}, fmt.Sprintf(
		"Units held per tenant over time, sampled every %v (first run, real time): limit %d, service %v",
		sampleEvery, *limitN, *service))
	body := draw.Crop(dc, 0, 0, 0, -header)
	tiles := draw.Tiles{Rows: rowsN, Cols: len(cols), PadX: vg.Points(18), PadY: vg.Points(14),
		PadLeft: vg.Points(6), PadBottom: vg.Points(6)}
	for i, col := range cols {
		for j, p := range col {
			p.Draw(tiles.At(body, i, j))
		}
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

// line is a line through pts, which are finite by construction.
func line(pts plotter.XYs) *plotter.Line {
	l, err := plotter.NewLine(pts)
	if err != nil {
		panic(fmt.Sprintf("chart: line through %v: %v", pts, err))
	}
	return l
}
