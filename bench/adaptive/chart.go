package main

import (
	"bytes"
	"fmt"
	"time"
)

// chart draws, for the adaptive strategies and failsafe-go, the limit over time
// (top, with the backend's capacity) and the p99 of served requests per 100ms
// (bottom), as an SVG.
func chart(all []namedStrategy, rs []result, phaseLen time.Duration) []byte {
	const (
		W, H         = 960.0, 640.0
		left, right  = 60.0, 200.0
		top1, h1     = 30.0, 250.0
		top2, h2     = 340.0, 250.0
		limitMax     = 128.0
		p99MaxMillis = 260.0
	)
	nb := len(rs[0].limits)
	x := func(k int) float64 { return left + (W-left-right)*float64(k)/float64(nb) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	axes := func(top, h, maxV float64, title, unit string) {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="14">%s</text>`+"\n", left, top-10, title)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", left, top, W-left-right, h)
		for i := 0; i <= 4; i++ {
			v := maxV * float64(i) / 4
			y := top + h - h*float64(i)/4
			fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end">%.0f%s</text>`+"\n",
				left, W-right, y, y, left-5, y+4, v, unit)
		}
		for p := 0; p <= len(phases); p++ {
			xx := x(p * int(phaseLen/bucket))
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#ccc" stroke-dasharray="4 3"/>`+"\n", xx, xx, top, top+h)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%.1fs</text>`+"\n", xx, top+h+14, (phaseLen * time.Duration(p)).Seconds())
		}
	}
	axes(top1, h1, limitMax, "Concurrency limit over time (dashed black: the backend's capacity)", "")
	axes(top2, h2, p99MaxMillis, "p99 latency of served requests per 100ms", "ms")
	colors := []string{"#1f77b4", "#aec7e8", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd", "#c5b0d5", "#8c564b"}
	// The capacity.
	fmt.Fprint(&b, `<polyline fill="none" stroke="black" stroke-width="2" stroke-dasharray="6 4" points="`)
	for k := 0; k < nb; k++ {
		c := phaseAt(time.Duration(k)*bucket, phaseLen).capacity
		fmt.Fprintf(&b, "%.1f,%.1f %.1f,%.1f ", x(k), top1+h1-h1*float64(c)/limitMax, x(k+1), top1+h1-h1*float64(c)/limitMax)
	}
	fmt.Fprintln(&b, `"/>`)
	ci := 0
	for i, s := range all {
		if s.group == "static" {
			continue
		}
		col := colors[ci%len(colors)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="`, col)
		for k, l := range rs[i].limits {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(k+1), top1+h1-h1*min(float64(l), limitMax)/limitMax)
		}
		fmt.Fprintln(&b, `"/>`)
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="`, col)
		for k, p := range rs[i].p99 {
			ms := min(float64(p)/1e6, p99MaxMillis)
			fmt.Fprintf(&b, "%.1f,%.1f ", x(k)+(x(1)-x(0))/2, top2+h2-h2*ms/p99MaxMillis)
		}
		fmt.Fprintln(&b, `"/>`)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="14" height="3" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			W-right+15, top1+20+18*float64(ci), col, W-right+35, top1+24+18*float64(ci), s.name)
		ci++
	}
	fmt.Fprintln(&b, `</svg>`)
	return b.Bytes()
}
