package swings

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The chart's size, and the space between its parts, in points.
const (
	chartW = 26 * vg.Centimeter
	chartH = 14 * vg.Centimeter
	pad    = vg.Length(10)
)

// ChartFormat is the image format for a file name: "png" for *.png, else "svg".
func ChartFormat(path string) string {
	if strings.EqualFold(filepath.Ext(path), ".png") {
		return "png"
	}
	return "svg"
}

// ChartOptions say how WriteChart draws.
type ChartOptions struct {
	Format string // "svg" or "png" (see ChartFormat); "" means svg
	// Log puts the seconds axis on a log scale, so that a lane of a second
	// is not flattened under one of a minute; 0 sits on the bottom edge,
	// the power of ten below the smallest value drawn.
	Log bool
}

// slack is the room a left-aligned text gets over its width in the
// built-in metrics: an SVG viewer's font may be 25% wider (Verdana).
const slack = 1.45

// Caps of a name in characters, a legend entry and a deadline's name.
const (
	chartNameW = 32
	entryW     = vg.Length(150)
	deadlineW  = vg.Length(80)
)

// WriteChart draws the report as a line chart of seconds by hour of day:
// per lane the median (solid, dots) and the worst (dashed, lighter), a
// cross at an hour with failed probes and a ring with ">" at a lower
// bound; hours without a value break the lines. Each class's deadline is a
// dotted line named right of the plot; on a linear axis one more than 3
// times the largest worst is named in the legend instead. The legend,
// below the plot, has an entry per lane, then a key to the marks.
func WriteChart(w io.Writer, r *Report, opt ChartOptions) error {
	ch, err := newChart(r, opt.Log)
	if err != nil {
		return err
	}
	c, err := draw.NewFormattedCanvas(chartW, chartH, cmp.Or(opt.Format, "svg"))
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	dc := draw.New(c)
	dc.SetColor(color.White) // under the legend too, not only the plot
	dc.Fill(dc.Rectangle.Path())
	lay := ch.layout(dc)
	ch.p.Draw(lay.plot)
	for _, l := range lay.labels {
		dc.FillText(l.sty, l.at, l.text)
	}
	for i := range lay.legends {
		lay.legends[i].Draw(lay.areas[i])
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	return nil
}

// chart is a report's plot with what goes beside it.
type chart struct {
	p          *plot.Plot
	logY       bool
	lanes, key []entry       // the legend's entries
	lines      []plotter.XYs // every line of the plot, in data coordinates
	bounds     int           // lower bounds marked
	shown      []ClassLine   // the deadlines drawn
}

// entry is one entry of the legend.
type entry struct {
	text   string
	thumbs []plot.Thumbnailer
}

// label is a text drawn beside the plot, with its box.
type label struct {
	text string
	sty  text.Style
	at   vg.Point
	box  vg.Rectangle
}

// chartLayout is where a chart's parts go on a canvas.
type chartLayout struct {
	plot, data draw.Canvas // the plot with its axes, and its data area
	labels     []label
	legends    []plot.Legend // one per column, in areas
	areas      []draw.Canvas
}

var (
	gray          = color.RGBA{R: 90, G: 90, B: 90, A: 255}
	gridColor     = color.RGBA{R: 225, G: 225, B: 225, A: 255}
	deadlineColor = color.RGBA{R: 60, G: 60, B: 60, A: 255}
	// dotShapes tell lanes apart once the colors repeat (never a cross or
	// a ring: they mark failures and lower bounds).
	dotShapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}}
)

// Styles: a lane's median, its worst (the same color, lighter), its dots,
// failures and lower bounds; a deadline.
func medianStyle(c color.Color) draw.LineStyle { return draw.LineStyle{Color: c, Width: vg.Points(2)} }
func worstStyle(c color.Color) draw.LineStyle {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8)/2 + 255/2) }
	return draw.LineStyle{Color: color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
}
func dotStyle(c color.Color, i int) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: dotShapes[(i/len(plotutil.DarkColors))%len(dotShapes)]}
}
func failStyle(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(5), Shape: failGlyph{}}
}
func boundStyle(c color.Color, mark bool) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(5), Shape: boundGlyph{mark}}
}
func deadlineStyle() draw.LineStyle {
	return draw.LineStyle{Color: deadlineColor, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(1.5), vg.Points(2.5)}}
}

// failGlyph is a bold cross on a white halo, visible on top of a line and its dots.
type failGlyph struct{}

func (failGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 0.7071
	for _, st := range []draw.LineStyle{{Color: color.White, Width: vg.Points(4.5)}, {Color: sty.Color, Width: vg.Points(2)}} {
		c.StrokeLine2(st, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
		c.StrokeLine2(st, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
	}
}

// boundGlyph is a ring on a white disc, so that it reads as open on top of
// a line, with a ">" in it (mark; the legend's has its ">" beside it).
type boundGlyph struct{ mark bool }

func (g boundGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	var ring vg.Path
	ring.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	ring.Arc(pt, sty.Radius, 0, 2*math.Pi)
	ring.Close()
	c.SetColor(color.White)
	c.Fill(ring)
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.5)})
	c.Stroke(ring)
	if g.mark {
		t := sans(8)
		t.Color, t.XAlign, t.YAlign = sty.Color, text.XCenter, text.YCenter
		c.FillText(t, pt, ">")
	}
}

// sans is the chart's text style at size points.
func sans(size vg.Length) text.Style {
	sty := text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler}
	sty.Font.Variant = "Sans"
	return sty
}

// fitText returns name, cut (see truncate) until name+suffix measures at
// most limit in sty.
func fitText(sty text.Style, name, suffix string, limit vg.Length) string {
	for n := min(len(name), chartNameW); n > 3; n-- {
		if s := truncate(name, n) + suffix; sty.Width(s) <= limit {
			return s
		}
	}
	return truncate(name, 3) + suffix
}

// newChart builds the plot of the report and the legend's entries.
func newChart(r *Report, logY bool) (*chart, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Queue time to first token by hour of day\nlast %d days, %s", r.Days, r.Timezone)
	if !r.To.IsZero() {
		p.Title.Text = fmt.Sprintf("Queue time to first token by hour of day\n%d days to %s (%s)", r.Days, r.To.In(r.location()).Format(tableTime), r.Timezone)
	}
	if logY {
		p.Title.Text += ", log scale" // not in the y label: a longer label squeezes the plot
	}
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text, p.Y.Label.Text = fmt.Sprintf("hour of day (%s)", r.Timezone), "seconds before the first token"
	for _, sty := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label} {
		sty.Font.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size, p.X.Label.TextStyle.Font.Size, p.Y.Label.TextStyle.Font.Size = 14, 12, 12
	hours := make(plot.ConstantTicks, HoursPerDay) // every third hour labelled
	for h := range hours {
		hours[h].Value = float64(h)
		if h%3 == 0 {
			hours[h].Label = fmt.Sprintf("%02d", h)
		}
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = hours, secondsTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)
	ch := &chart{p: p, logY: logY}

	// The y range: the data, then the deadlines that fit it.
	dataTop, minPos := 0.0, math.Inf(1)
	note := func(v float64) {
		dataTop = max(dataTop, v)
		if v > 0 {
			minPos = min(minPos, v)
		}
	}
	for _, l := range r.Lanes {
		for _, h := range l.Hours {
			if h.HasQueue() {
				note(h.WorstS)
				note(h.MedianS)
			}
		}
	}
	var hidden []ClassLine
	for _, c := range r.Classes {
		if logY || dataTop == 0 || c.DeadlineS <= 3*dataTop {
			ch.shown = append(ch.shown, c)
			note(c.DeadlineS)
		} else {
			hidden = append(hidden, c)
		}
	}
	top, floor := cmp.Or(dataTop, 1), 0.0 // floor: where 0 and anything below sit on a log scale
	if logY {
		// A decade step below the smallest value, so that a 0 (drawn on
		// the floor) stays apart from it.
		if math.IsInf(minPos, 1) {
			minPos = 1
		}
		if floor = math.Pow(10, math.Floor(math.Log10(minPos))); floor >= minPos {
			floor /= 10
		}
		top = max(dataTop, floor*10)
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	y := func(v float64) float64 { return max(v, floor) }
	add := func(pts plotter.XYs, sty draw.LineStyle) error {
		ln, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		ln.LineStyle = sty
		p.Add(ln)
		ch.lines = append(ch.lines, pts)
		return nil
	}
	scatter := func(pts plotter.XYs, sty draw.GlyphStyle) error {
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		s.GlyphStyle = sty
		p.Add(s)
		return nil
	}

	legendSty := sans(11)
	for i, l := range r.Lanes {
		c := plotutil.DarkColors[i%len(plotutil.DarkColors)]
		var med, bounds, fails, runMed, runWorst plotter.XYs // runs: of consecutive hours
		for _, h := range l.Hours {
			x := float64(h.Hour)
			if h.HasQueue() {
				pt, wpt := plotter.XY{X: x, Y: y(h.MedianS)}, plotter.XY{X: x, Y: y(h.WorstS)}
				if h.MedianCensored {
					bounds = append(bounds, pt)
				} else {
					med = append(med, pt)
				}
				if h.Censored {
					bounds = append(bounds, wpt)
				}
				runMed, runWorst = append(runMed, pt), append(runWorst, wpt)
			}
			if (!h.HasQueue() || h.Hour == HoursPerDay-1) && len(runMed) > 0 {
				if err := cmp.Or(add(runWorst, worstStyle(c)), add(runMed, medianStyle(c))); err != nil {
					return nil, err
				}
				runMed, runWorst = nil, nil
			}
			if h.Failures > 0 && !h.MedianCensored { // a ring there says it too
				fails = append(fails, plotter.XY{X: x, Y: y(h.MedianS)}) // 0 without a queue
			}
		}
		if err := cmp.Or(scatter(med, dotStyle(c, i)), scatter(bounds, boundStyle(c, true)), scatter(fails, failStyle(c))); err != nil {
			return nil, err
		}
		ch.bounds += len(bounds)
		suffix := ""
		switch {
		case l.Records == 0:
			suffix = " (no data)"
		case !l.Swing.OK:
			suffix = " (no ok probe)"
		}
		ch.lanes = append(ch.lanes, entry{fitText(legendSty, l.Name, suffix, entryW),
			[]plot.Thumbnailer{&plotter.Line{LineStyle: medianStyle(c)}, &plotter.Scatter{GlyphStyle: dotStyle(c, i)}}})
	}
	for _, c := range ch.shown {
		if err := add(plotter.XYs{{X: -0.5, Y: c.DeadlineS}, {X: HoursPerDay - 0.5, Y: c.DeadlineS}}, deadlineStyle()); err != nil {
			return nil, err
		}
	}
	// Lines set the axes' ranges as they are added: set them last.
	p.X.Min, p.X.Max = -0.5, HoursPerDay-0.5
	p.Y.Min, p.Y.Max = floor, top*1.08
	if logY {
		p.Y.Max = top * 1.3
	}

	ch.key = []entry{
		{"median of hourly worsts", []plot.Thumbnailer{&plotter.Line{LineStyle: medianStyle(gray)}, &plotter.Scatter{GlyphStyle: dotStyle(gray, 0)}}},
		{"worst (max)", []plot.Thumbnailer{&plotter.Line{LineStyle: worstStyle(gray)}}},
		{"hour with failed probes", []plot.Thumbnailer{&plotter.Scatter{GlyphStyle: failStyle(gray)}}},
		{"> lower bound (failed probe)", []plot.Thumbnailer{&plotter.Scatter{GlyphStyle: boundStyle(gray, false)}}},
	}
	if len(r.Classes) > 0 {
		ch.key = append(ch.key, entry{"class deadline", []plot.Thumbnailer{&plotter.Line{LineStyle: deadlineStyle()}}})
	}
	for _, c := range hidden {
		ch.key = append(ch.key, entry{text: fitText(legendSty, c.Name, " "+secsLabel(c.DeadlineS)+" s: above", entryW)})
	}
	if len(hidden) > 0 {
		ch.key = append(ch.key, entry{text: "(-log draws them all)"})
	}
	return ch, nil
}

// layout places the chart on dc: the legend in as many columns along the
// bottom as fit, the deadlines' names right of the plot level with their
// lines (pushed apart where they would touch), the plot in the rest.
func (ch *chart) layout(dc draw.Canvas) chartLayout {
	var lay chartLayout
	legendSty := sans(11)
	colW := vg.Length(1)
	for _, e := range slices.Concat(ch.lanes, ch.key) {
		colW = max(colW, vg.Points(24)+legendSty.Width(" "+e.text)*slack+pad)
	}
	cols, rows := max(2, int((chartW-2*pad)/colW)), 1 // entryW keeps two
	for (len(ch.lanes)+rows-1)/rows+(len(ch.key)+rows-1)/rows > cols {
		rows++
	}
	legendH := vg.Length(rows)*(legendSty.Height("Xg")+vg.Points(4)) + pad
	colW = (chartW - 2*pad) / vg.Length(cols)
	for _, g := range [][]entry{ch.lanes, ch.key} {
		for col := range slices.Chunk(g, rows) {
			leg := plot.NewLegend()
			leg.Top, leg.Left, leg.Padding, leg.ThumbnailWidth, leg.TextStyle = true, true, vg.Points(4), vg.Points(24), legendSty
			for _, e := range col {
				leg.Add(e.text, e.thumbs...)
			}
			left := pad + vg.Length(len(lay.legends))*colW
			lay.legends = append(lay.legends, leg)
			lay.areas = append(lay.areas, draw.Crop(dc, left, left+colW-chartW, 0, legendH-chartH))
		}
	}

	nameSty := sans(10)
	nameSty.Color, nameSty.YAlign = deadlineColor, text.YCenter
	margin := pad
	for _, c := range ch.shown {
		margin = max(margin, nameSty.Width(fitText(nameSty, c.Name, deadlineSuffix(c), deadlineW))*slack+pad)
	}
	lay.plot = draw.Crop(dc, 0, -margin, legendH, 0)
	if ch.logY {
		// gonum/plot would place the label by the range's arithmetic
		// middle, off the top of a log scale: it goes beside the axis.
		lbl := ch.p.Y.Label
		ch.p.Y.Label.Text = ""
		h, descent := lbl.TextStyle.Height(lbl.Text), lbl.TextStyle.FontExtents().Descent
		lbl.TextStyle.Rotation += math.Pi / 2
		lay.labels = append(lay.labels, label{text: lbl.Text, sty: lbl.TextStyle, at: vg.Point{X: lay.plot.Min.X + h - descent, Y: lay.plot.Center().Y}})
		lay.plot = draw.Crop(lay.plot, h+descent+lbl.Padding, 0, 0, 0)
	}
	lay.data = ch.p.DataCanvas(lay.plot)
	_, y := ch.p.Transforms(&lay.data)
	var names []label
	for _, c := range ch.shown {
		names = append(names, label{text: fitText(nameSty, c.Name, deadlineSuffix(c), deadlineW), sty: nameSty,
			at: vg.Point{X: lay.data.Max.X + pad/2, Y: y(c.DeadlineS)}})
	}
	slices.SortFunc(names, func(a, b label) int { return cmp.Compare(a.at.Y, b.at.Y) })
	h := nameSty.Height("Xg")
	for i := range names {
		n := &names[i]
		if i > 0 {
			n.at.Y = max(n.at.Y, names[i-1].at.Y+h)
		}
		n.box = vg.Rectangle{Min: vg.Point{X: n.at.X, Y: n.at.Y - h/2}, Max: vg.Point{X: n.at.X + nameSty.Width(n.text), Y: n.at.Y + h/2}}
	}
	lay.labels = append(lay.labels, names...)
	return lay
}

// deadlineSuffix follows a class's name beside its deadline.
func deadlineSuffix(c ClassLine) string { return " " + secsLabel(c.DeadlineS) + " s" }

// secsLabel writes seconds without trailing zeros: 60, 0.5, 3600.
func secsLabel(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// secondsTicks labels the y axis every "nice" step (1, 2, 5, 10, 15, 30 s …).
type secondsTicks struct{}

func (secondsTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if !(span > 0) {
		return []plot.Tick{{Value: lo, Label: fmt.Sprintf("%g", lo)}}
	}
	step := span / 8
	for _, s := range []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600} {
		if span/s <= 10 {
			step = s
			break
		}
	}
	dec := 0
	for d := step; d < 1 && dec < 3; d *= 10 {
		dec++
	}
	var ticks []plot.Tick
	for k := math.Ceil(lo / step); k*step <= hi+step*1e-9; k++ {
		ticks = append(ticks, plot.Tick{Value: k * step, Label: strconv.FormatFloat(k*step, 'f', dec, 64)})
	}
	return ticks
}

// logTicks labels a log axis at 1, 2 and 5 of each decade (only at 1 when
// the range spans more than three decades), with unlabelled marks at the
// other whole multiples.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return []plot.Tick{{Value: math.Max(lo, 1e-3), Label: secsLabel(math.Max(lo, 1e-3))}}
	}
	first, last := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	var ticks []plot.Tick
	for k := first; k <= last; k++ {
		for m := 1; m <= 9; m++ {
			// Parsed from decimal so that 3e-1 is 0.3, not 0.30000000000000004.
			v, _ := strconv.ParseFloat(fmt.Sprintf("%de%d", m, k), 64)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (last-first <= 3 && (m == 2 || m == 5)) {
				t.Label = secsLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
