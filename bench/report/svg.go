package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strings"
)

// The charts are plain SVG 1.1 written by hand: a few hundred lines, no
// dependency, and byte-for-byte the same output for the same input, so that
// a golden file can pin it.

// palette is the Okabe–Ito set, told apart also by colour-blind readers;
// series take its colours in order.
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

func colour(i int) string { return palette[i%len(palette)] }

// BarChart draws, for each category along the x axis, one bar per series.
type BarChart struct {
	Title    string
	Subtitle string
	YLabel   string // unit of the values
	// Categories along x; a category's label may hold "\n" for a second
	// line.
	Categories []string
	Series     []string
	// Values[category][series]; NaN means no bar.
	Values [][]float64
	// Whiskers, if not nil, is [category][series]: a line from the top of
	// the bar up to this value (for example p99 above a p50 bar).
	Whiskers [][]float64
	// Notes, if not nil, is [category][series]: a word drawn where a bar is
	// missing (for example "n/a").
	Notes [][]string
	// Limits, if not nil, is a value per category (NaN: none): a dashed
	// line across the category, labelled LimitLabel in the legend.
	Limits     []float64
	LimitLabel string
	// LogY draws the y axis on a logarithmic scale, for values that span
	// decades; values at or below zero are then not drawn.
	LogY bool
}

// LineChart draws panels side by side, sharing the y axis: in each, one
// line per series through the points along x.
type LineChart struct {
	Title    string
	Subtitle string
	YLabel   string
	X        []string
	Series   []string
	Panels   []Panel
	// LogY draws the y axis on a logarithmic scale.
	LogY bool
}

// Panel is one part of a LineChart.
type Panel struct {
	Title string
	// Values[series][x]; NaN means no point.
	Values [][]float64
	// Notes[series], if set, is said in the panel instead of a line (for
	// example "n/a").
	Notes []string
}

// Layout, in SVG user units.
const (
	chartHeight  = 360.0
	marginLeft   = 88.0
	marginRight  = 16.0
	marginTop    = 64.0
	marginBottom = 56.0
	barWidth     = 16.0
	barGap       = 2.0
	groupGap     = 24.0
	minSlot      = 120.0 // narrowest category: room for a label such as "stdio, legacy"
	panelWidth   = 220.0
	panelGap     = 28.0
	fontFamily   = "Helvetica, Arial, sans-serif"
)

type svgWriter struct {
	b bytes.Buffer
}

func (w *svgWriter) f(format string, args ...any) { fmt.Fprintf(&w.b, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

// n prints a coordinate: one decimal, no trailing ".0".
func n(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

func (w *svgWriter) open(width, height float64, title, subtitle string) {
	w.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="%s" font-size="12">`+"\n",
		n(width), n(height), n(width), n(height), fontFamily)
	w.f(`<title>%s</title>`+"\n", esc(title))
	w.f(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	w.f(`<text x="%s" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", n(marginLeft), esc(title))
	if subtitle != "" {
		w.f(`<text x="%s" y="40" fill="#555555">%s</text>`+"\n", n(marginLeft), esc(subtitle))
	}
}

func (w *svgWriter) close() []byte {
	w.f("</svg>\n")
	return w.b.Bytes()
}

// legend draws the series' swatches in a row from x, at y.
func (w *svgWriter) legend(x, y float64, series []string, extra string) {
	for i, s := range series {
		w.f(`<rect x="%s" y="%s" width="10" height="10" fill="%s"/>`, n(x), n(y-9), colour(i))
		w.f(`<text x="%s" y="%s">%s</text>`+"\n", n(x+14), n(y), esc(s))
		x += 14 + 7*float64(len(s)) + 16
	}
	if extra != "" {
		w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333" stroke-dasharray="4 3"/>`, n(x), n(y-4), n(x+18), n(y-4))
		w.f(`<text x="%s" y="%s">%s</text>`+"\n", n(x+22), n(y), esc(extra))
	}
}

// scale maps values to y coordinates between top and bottom.
type scale struct {
	lo, hi      float64 // in values (log10 of values when log)
	top, bottom float64
	log         bool
}

func (s scale) y(v float64) float64 {
	if s.log {
		v = math.Log10(math.Max(v, math.Pow(10, s.lo)))
	}
	return s.bottom - (v-s.lo)/(s.hi-s.lo)*(s.bottom-s.top)
}

// niceCeil rounds v up to 1, 1.5, 2, 2.5, 3 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// axis draws horizontal grid lines with labels between the plot's top and
// bottom, and returns the scale: linear from 0 to a round value above max,
// or, with log, decades from below min to above max.
func (w *svgWriter) axis(min, max float64, log bool, left, right, top, bottom float64, label string) scale {
	s := scale{top: top, bottom: bottom, log: log}
	var ticks []float64
	if log {
		s.lo = math.Floor(math.Log10(math.Max(min, 1e-9)))
		s.hi = math.Ceil(math.Log10(math.Max(max, 1e-9)))
		if s.hi <= s.lo {
			s.hi = s.lo + 1
		}
		for e := s.lo; e <= s.hi; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
	} else {
		s.hi = niceCeil(max)
		for i := 0; i <= 5; i++ {
			ticks = append(ticks, s.hi*float64(i)/5)
		}
	}
	for _, t := range ticks {
		y := s.y(t)
		w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/>`, n(left), n(y), n(right), n(y))
		w.f(`<text x="%s" y="%s" text-anchor="end" fill="#555555">%s</text>`+"\n", n(left-6), n(y+4), esc(num(t)))
	}
	w.f(`<text transform="translate(%s %s) rotate(-90)" text-anchor="middle" fill="#555555">%s</text>`+"\n",
		n(left-74), n((top+bottom)/2), esc(label))
	return s
}

// multiline draws a label of one or more lines centred at x from y down.
func (w *svgWriter) multiline(x, y float64, label string) {
	for i, line := range strings.Split(label, "\n") {
		w.f(`<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", n(x), n(y+14*float64(i)), esc(line))
	}
}

func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// span is the smallest and the largest positive value of a chart.
type span struct{ lo, hi float64 }

func newSpan() span { return span{lo: math.Inf(1)} }

func (s *span) add(v float64) {
	if valid(v) && v > 0 {
		s.lo, s.hi = math.Min(s.lo, v), math.Max(s.hi, v)
	}
}

// bounds returns the span; 1 and 0 when no value was positive.
func (s span) bounds() (lo, hi float64) {
	if math.IsInf(s.lo, 1) {
		return 1, 0
	}
	return s.lo, s.hi
}

// at reads m[i][j], NaN when absent.
func at(m [][]float64, i, j int) float64 {
	if i < len(m) && j < len(m[i]) {
		return m[i][j]
	}
	return math.NaN()
}

// SVG renders the chart.
func (c *BarChart) SVG() []byte {
	groupW := float64(len(c.Series))*(barWidth+barGap) - barGap
	// Each category gets a slot wide enough for its bars and its label.
	slot := math.Max(groupW+groupGap, minSlot)
	width := math.Max(640, marginLeft+marginRight+float64(len(c.Categories))*slot)
	right := width - marginRight
	slot = (right - marginLeft) / float64(max(len(c.Categories), 1))
	top, bottom := marginTop, chartHeight-marginBottom
	sp := newSpan()
	for i := range c.Categories {
		for j := range c.Series {
			sp.add(at(c.Values, i, j))
			sp.add(at(c.Whiskers, i, j))
		}
		if i < len(c.Limits) {
			sp.add(c.Limits[i])
		}
	}
	min, max := sp.bounds()
	w := &svgWriter{}
	w.open(width, chartHeight, c.Title, c.Subtitle)
	limitLabel := ""
	if c.Limits != nil {
		limitLabel = c.LimitLabel
	}
	w.legend(marginLeft, 58, c.Series, limitLabel)
	// Headroom above the tallest bar for its rotated value label.
	var sc scale
	if c.LogY {
		sc = w.axis(min, max*4, true, marginLeft, right, top+12, bottom, c.YLabel)
	} else {
		sc = w.axis(0, max*1.3, false, marginLeft, right, top+12, bottom, c.YLabel)
	}
	for i, cat := range c.Categories {
		x0 := marginLeft + float64(i)*slot + (slot-groupW)/2
		for j, series := range c.Series {
			x := x0 + float64(j)*(barWidth+barGap)
			v := at(c.Values, i, j)
			if !valid(v) || (c.LogY && v <= 0) {
				if i < len(c.Notes) && j < len(c.Notes[i]) && c.Notes[i][j] != "" {
					w.f(`<text transform="translate(%s %s) rotate(-90)" font-size="10" fill="#777777">%s</text>`+"\n",
						n(x+barWidth/2+3), n(bottom-3), esc(c.Notes[i][j]))
				}
				continue
			}
			y := sc.y(v)
			w.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s, %s: %s %s</title></rect>`+"\n",
				n(x), n(y), n(barWidth), n(bottom-y), colour(j), esc(series), esc(strings.ReplaceAll(cat, "\n", " ")), esc(num(v)), esc(c.YLabel))
			label := num(v)
			if wv := at(c.Whiskers, i, j); valid(wv) {
				wy := sc.y(wv)
				w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333"/>`, n(x+barWidth/2), n(y), n(x+barWidth/2), n(wy))
				w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333"/>`+"\n", n(x+3), n(wy), n(x+barWidth-3), n(wy))
				y, label = wy, label+" / "+num(wv)
			}
			// Rotated, the label's glyphs lie left of its baseline: it
			// starts just right of the whisker.
			w.f(`<text transform="translate(%s %s) rotate(-90)" font-size="9" fill="#333333">%s</text>`+"\n",
				n(x+barWidth/2+8), n(y-3), esc(label))
		}
		if i < len(c.Limits) && valid(c.Limits[i]) {
			y := sc.y(c.Limits[i])
			w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333" stroke-dasharray="4 3"/>`+"\n",
				n(x0-groupGap/3), n(y), n(x0+groupW+groupGap/3), n(y))
		}
		w.multiline(x0+groupW/2, bottom+18, cat)
	}
	w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333"/>`+"\n", n(marginLeft), n(bottom), n(right), n(bottom))
	return w.close()
}

// SVG renders the chart.
func (c *LineChart) SVG() []byte {
	width := math.Max(640, marginLeft+marginRight+float64(len(c.Panels))*(panelWidth+panelGap))
	top, bottom := marginTop+12, chartHeight-marginBottom
	sp := newSpan()
	for _, p := range c.Panels {
		for _, row := range p.Values {
			for _, v := range row {
				sp.add(v)
			}
		}
	}
	min, max := sp.bounds()
	w := &svgWriter{}
	w.open(width, chartHeight, c.Title, c.Subtitle)
	w.legend(marginLeft, 58, c.Series, "")
	sc := w.axis(min, max, c.LogY, marginLeft, width-marginRight, top, bottom, c.YLabel)
	step := 0.0
	if len(c.X) > 1 {
		step = (panelWidth - 40) / float64(len(c.X)-1)
	}
	for pi, p := range c.Panels {
		x0 := marginLeft + panelGap/2 + float64(pi)*(panelWidth+panelGap)
		w.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#bbbbbb"/>`+"\n",
			n(x0), n(top-4), n(panelWidth), n(bottom-top+4))
		w.f(`<text x="%s" y="%s" text-anchor="middle" font-weight="bold">%s</text>`+"\n", n(x0+panelWidth/2), n(top+10), esc(p.Title))
		for xi, label := range c.X {
			w.multiline(x0+20+float64(xi)*step, bottom+18, label)
		}
		var notes []string
		for si, series := range c.Series {
			if si < len(p.Notes) && p.Notes[si] != "" {
				notes = append(notes, series+": "+p.Notes[si])
			}
			var pts []string
			for xi := range c.X {
				v := at(p.Values, si, xi)
				if !valid(v) || (c.LogY && v <= 0) {
					continue
				}
				x, y := x0+20+float64(xi)*step, sc.y(v)
				pts = append(pts, n(x)+","+n(y))
				w.f(`<circle cx="%s" cy="%s" r="3" fill="%s"><title>%s, %s, %s: %s %s</title></circle>`+"\n",
					n(x), n(y), colour(si), esc(series), esc(p.Title), esc(strings.ReplaceAll(c.X[xi], "\n", " ")), esc(num(v)), esc(c.YLabel))
			}
			if len(pts) > 1 {
				w.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), colour(si))
			}
		}
		for i, note := range notes {
			w.f(`<text x="%s" y="%s" font-size="10" fill="#777777">%s</text>`+"\n", n(x0+6), n(top+26+12*float64(i)), esc(note))
		}
	}
	return w.close()
}
