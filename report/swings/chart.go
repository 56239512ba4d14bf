package swings

import (
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

// Chart size: wide enough for 24 hours and a legend column on the right.
const (
	chartW = 26 * vg.Centimeter
	chartH = 14 * vg.Centimeter
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
	// Format is "svg" or "png" (see ChartFormat); "" means svg.
	Format string
	// Log puts the seconds axis on a log scale, so that a lane of a second
	// is not flattened under one of a minute. Values of 0 sit on the bottom
	// edge, the power of ten below the smallest value drawn.
	Log bool
}

// legendSlack is how much wider than its text, as measured with the
// built-in (Liberation Sans) metrics, the legend's column is. An SVG viewer
// draws the text with whatever font it has (DejaVu Sans is about 15%
// wider, Verdana about 25%); the text starts at the column's left edge and
// grows into the slack instead of running off the image.
const legendSlack = 1.45

// WriteChart draws the report as a line chart: hour of day on x, seconds on
// y, per lane a solid line with dots for the median of the hourly worsts, a
// lighter dashed line for the worst, and a cross at each hour of day that
// had failed probes. Hours without a value break the lines. A value that is
// a lower bound (a failed probe waited at least that long) is an open ring
// with a ">" beside it. Each class's deadline is a dotted horizontal line
// labelled with the class's name; on a linear axis a deadline far above the
// data (more than 3 times the largest worst) is left off the plot and named
// in the legend instead. The legend, right of the plot, has one entry per
// lane and a key to the marks.
func WriteChart(w io.Writer, r *Report, opt ChartOptions) error {
	format := opt.Format
	if format == "" {
		format = "svg"
	}
	p, legend, err := chart(r, opt.Log)
	if err != nil {
		return err
	}
	c, err := draw.NewFormattedCanvas(chartW, chartH, format)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	dc := draw.New(c)
	dc.SetColor(color.White) // under the legend too, not only the plot
	dc.Fill(dc.Rectangle.Path())
	lay := layout(legend)
	plotArea := draw.Crop(dc, 0, -(lay.column + lay.pad), 0, 0)
	if opt.Log {
		// gonum/plot places a vertical axis label by the arithmetic middle
		// of the range, which on a log scale pushes it off the top and
		// squeezes the plot: draw the label here instead, beside the axis.
		lbl := p.Y.Label
		p.Y.Label.Text = ""
		h := lbl.TextStyle.Height(lbl.Text)
		descent := lbl.TextStyle.FontExtents().Descent
		sty := lbl.TextStyle
		sty.Rotation += math.Pi / 2
		plotArea.FillText(sty, vg.Point{X: plotArea.Min.X + h - descent, Y: plotArea.Center().Y}, lbl.Text)
		plotArea = draw.Crop(plotArea, h+descent+lbl.Padding, 0, 0, 0)
	}
	p.Draw(plotArea)
	legend.Draw(draw.Crop(dc, chartW-lay.column, -lay.pad, 0, -3*lay.pad))
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	return nil
}

// legendLayout is where the legend goes: a column of width column at the
// right edge of the image (its text starting at the column's left edge),
// the plot to its left, pad between them and at the image's edge.
type legendLayout struct {
	measured vg.Length // widest entry (thumbnail and text), built-in metrics
	column   vg.Length // measured*legendSlack + pad
	pad      vg.Length
}

func layout(legend plot.Legend) legendLayout {
	pad := vg.Points(10)
	m := legendWidth(legend)
	return legendLayout{measured: m, column: m*legendSlack + pad, pad: pad}
}

var (
	gray      = color.RGBA{R: 90, G: 90, B: 90, A: 255}
	gridColor = color.RGBA{R: 225, G: 225, B: 225, A: 255}
)

// laneColor is a dark palette color; the worst line is the same color, lighter.
func laneColor(i int) color.Color { return plotutil.DarkColors[i%len(plotutil.DarkColors)] }

// dotShapes tell lanes apart once the colors repeat (never a cross or a
// ring: they mark failures and lower bounds).
var dotShapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}}

func laneShape(i int) draw.GlyphDrawer {
	return dotShapes[(i/len(plotutil.DarkColors))%len(dotShapes)]
}

// legendNameW caps a lane or class name in the legend, in characters;
// legendTextW caps any legend text as measured, so the plot keeps its width
// (the legend's column is legendSlack times as wide).
const (
	legendNameW = 32
	legendTextW = vg.Length(150) // points
)

// fitText returns name, cut (see truncate) until name+suffix measures at
// most legendTextW in sty.
func fitText(sty text.Style, name, suffix string) string {
	for n := min(len(name), legendNameW); n > 3; n-- {
		if s := truncate(name, n) + suffix; sty.Width(s) <= legendTextW {
			return s
		}
	}
	return truncate(name, 3) + suffix
}

func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8)/2 + 255/2) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}
}

func medianStyle(c color.Color) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(2)}
}

func worstStyle(c color.Color) draw.LineStyle {
	return draw.LineStyle{Color: lighter(c), Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
}

func dotStyle(c color.Color, shape draw.GlyphDrawer) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: shape}
}

func failStyle(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(5), Shape: failGlyph{}}
}

// failGlyph is a bold cross on a white halo, visible on top of a line and its dots.
type failGlyph struct{}

func (failGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 0.7071
	cross := func(width vg.Length, col color.Color) {
		c.SetLineStyle(draw.LineStyle{Color: col, Width: width})
		var p vg.Path
		p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
		p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
		c.Stroke(p)
		p = p[:0]
		p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
		p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
		c.Stroke(p)
	}
	cross(vg.Points(4.5), color.White)
	cross(vg.Points(2), sty.Color)
}

// chart builds the plot and its legend (drawn apart, beside the plot, so
// that it never hides a line).
func chart(r *Report, logY bool) (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Queue time to first token by hour of day\nlast %d days, %s", r.Days, r.Timezone)
	if !r.To.IsZero() {
		p.Title.Text = fmt.Sprintf("Queue time to first token by hour of day\n%d days to %s (%s)", r.Days, r.To.In(r.location()).Format(tableTime), r.Timezone)
	}
	if logY {
		// Not in the y label: a longer label squeezes the plot.
		p.Title.Text += ", log scale"
	}
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = fmt.Sprintf("hour of day (%s)", r.Timezone)
	p.Y.Label.Text = "seconds before the first token"
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.X.Min, p.X.Max = -0.5, HoursPerDay-0.5
	p.X.Tick.Marker = hourTicks{}
	for _, sty := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label} {
		sty.Font.Variant = "Sans"
	}

	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(4)
	legend.ThumbnailWidth = vg.Points(24)
	legend.TextStyle.Font.Variant = "Sans"
	legend.TextStyle.Font.Size = vg.Points(11)

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
	var shown, hidden []ClassLine
	for _, c := range r.Classes {
		if logY || dataTop == 0 || c.DeadlineS <= 3*dataTop {
			shown = append(shown, c)
			note(c.DeadlineS)
		} else {
			hidden = append(hidden, c)
		}
	}
	top := dataTop
	var floor float64 // log scale: where 0 and anything below sit
	if logY {
		if math.IsInf(minPos, 1) {
			minPos = 1
		}
		// A decade step below the smallest value, so that a 0 (drawn
		// on the floor) stays apart from it.
		floor = math.Pow(10, math.Floor(math.Log10(minPos)))
		if floor >= minPos {
			floor /= 10
		}
		top = max(top, floor*10)
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min, p.Y.Max = floor, top*1.3
	} else {
		if top <= 0 {
			top = 1
		}
		p.Y.Tick.Marker = secondsTicks{}
		p.Y.Min, p.Y.Max = 0, top*1.08
	}
	y := func(v float64) float64 { return max(v, floor) }

	for i, l := range r.Lanes {
		c := laneColor(i)
		var med, medBound, worstBound, fails plotter.XYs
		var medSegs, worstSegs []plotter.XYs
		var fromMed, fromWorst plotter.XYs
		for _, h := range l.Hours {
			x := float64(h.Hour)
			if h.HasQueue() {
				pt := plotter.XY{X: x, Y: y(h.MedianS)}
				if h.MedianCensored {
					medBound = append(medBound, pt)
				} else {
					med = append(med, pt)
				}
				fromMed = append(fromMed, pt)
				wpt := plotter.XY{X: x, Y: y(h.WorstS)}
				fromWorst = append(fromWorst, wpt)
				if h.Censored {
					worstBound = append(worstBound, wpt)
				}
			} else {
				medSegs, worstSegs = appendSeg(medSegs, fromMed), appendSeg(worstSegs, fromWorst)
				fromMed, fromWorst = nil, nil
			}
			if h.Failures > 0 {
				v := 0.0
				if h.HasQueue() {
					v = h.MedianS
				}
				fails = append(fails, plotter.XY{X: x, Y: y(v)})
			}
		}
		medSegs, worstSegs = appendSeg(medSegs, fromMed), appendSeg(worstSegs, fromWorst)

		for _, seg := range worstSegs {
			ln, err := plotter.NewLine(seg)
			if err != nil {
				return nil, legend, fmt.Errorf("chart: %w", err)
			}
			ln.LineStyle = worstStyle(c)
			p.Add(ln)
		}
		medLine := &plotter.Line{LineStyle: medianStyle(c)}
		for _, seg := range medSegs {
			ln, err := plotter.NewLine(seg)
			if err != nil {
				return nil, legend, fmt.Errorf("chart: %w", err)
			}
			ln.LineStyle = medianStyle(c)
			p.Add(ln)
		}
		dots := &plotter.Scatter{GlyphStyle: dotStyle(c, laneShape(i))}
		bounds := append(slices.Clone(medBound), worstBound...)
		for _, set := range []struct {
			pts plotter.XYs
			sty draw.GlyphStyle
		}{
			{med, dotStyle(c, laneShape(i))},
			{bounds, boundStyle(c)},
			{fails, failStyle(c)},
		} {
			if len(set.pts) == 0 {
				continue
			}
			s, err := plotter.NewScatter(set.pts)
			if err != nil {
				return nil, legend, fmt.Errorf("chart: %w", err)
			}
			s.GlyphStyle = set.sty
			p.Add(s)
		}
		if len(bounds) > 0 {
			lb, err := boundLabels(bounds, c)
			if err != nil {
				return nil, legend, err
			}
			p.Add(lb)
		}

		suffix := ""
		switch {
		case l.Records == 0:
			suffix = " (no data)"
		case !l.Swing.OK:
			suffix = " (no ok probe)"
		}
		legend.Add(fitText(legend.TextStyle, l.Name, suffix), medLine, dots)
	}

	for _, c := range shown {
		ln, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: c.DeadlineS}, {X: p.X.Max, Y: c.DeadlineS}})
		if err != nil {
			return nil, legend, fmt.Errorf("chart: %w", err)
		}
		ln.LineStyle = deadlineStyle()
		p.Add(ln)
		// Labelled at the left end, left-aligned: a viewer's wider font
		// grows the text into the plot, not into the legend.
		lb, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{{X: p.X.Min, Y: c.DeadlineS}},
			Labels: []string{truncate(c.Name, 24) + " deadline " + secsLabel(c.DeadlineS) + " s"},
		})
		if err != nil {
			return nil, legend, fmt.Errorf("chart: %w", err)
		}
		lb.TextStyle[0].Color = deadlineColor
		lb.TextStyle[0].Font.Variant = "Sans"
		lb.Offset = vg.Point{X: vg.Points(3), Y: vg.Points(2)}
		p.Add(lb)
	}
	// Lines and labels set the axes' ranges as they are added: set them again.
	if logY {
		p.Y.Min, p.Y.Max = floor, top*1.3
	} else {
		p.Y.Min, p.Y.Max = 0, top*1.08
	}
	p.X.Min, p.X.Max = -0.5, HoursPerDay-0.5

	// Key to the marks, shared by every lane.
	legend.Add("")
	legend.Add("median of hourly worsts", &plotter.Line{LineStyle: medianStyle(gray)}, &plotter.Scatter{GlyphStyle: dotStyle(gray, draw.CircleGlyph{})})
	legend.Add("worst (max)", &plotter.Line{LineStyle: worstStyle(gray)})
	legend.Add("hour with failed probes", &plotter.Scatter{GlyphStyle: failStyle(gray)})
	legend.Add("> lower bound (failed probe)", &plotter.Scatter{GlyphStyle: boundStyle(gray)})
	if len(r.Classes) > 0 {
		legend.Add("class deadline", &plotter.Line{LineStyle: deadlineStyle()})
	}
	for _, c := range hidden {
		legend.Add(fitText(legend.TextStyle, c.Name, " "+secsLabel(c.DeadlineS)+" s: above"))
	}
	if len(hidden) > 0 {
		legend.Add("(-log draws them all)")
	}
	return p, legend, nil
}

var deadlineColor = color.RGBA{R: 60, G: 60, B: 60, A: 255}

func deadlineStyle() draw.LineStyle {
	return draw.LineStyle{Color: deadlineColor, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(1.5), vg.Points(2.5)}}
}

// boundStyle marks a lower bound: an open ring, white inside.
func boundStyle(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(4), Shape: boundGlyph{}}
}

// boundGlyph is a ring on a white disc, so that it reads as open on top of a line.
type boundGlyph struct{}

func (boundGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetColor(color.White)
	c.Fill(circle(pt, sty.Radius))
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.5)})
	c.Stroke(circle(pt, sty.Radius))
}

func circle(pt vg.Point, r vg.Length) vg.Path {
	var p vg.Path
	p.Move(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Arc(pt, r, 0, 2*math.Pi)
	p.Close()
	return p
}

// boundLabels puts a ">" left of each lower-bound mark.
func boundLabels(pts plotter.XYs, c color.Color) (*plotter.Labels, error) {
	labels := make([]string, len(pts))
	for i := range labels {
		labels[i] = ">"
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Color = c
		lb.TextStyle[i].Font = font.From(lb.TextStyle[i].Font, vg.Points(11))
		lb.TextStyle[i].Font.Variant = "Sans"
		lb.TextStyle[i].XAlign = text.XRight
		lb.TextStyle[i].YAlign = text.YCenter
	}
	lb.Offset = vg.Point{X: -vg.Points(5)}
	return lb, nil
}

// secsLabel writes seconds without trailing zeros: 60, 0.5, 3600.
func secsLabel(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// appendSeg adds a run of consecutive hours, if any.
func appendSeg(segs []plotter.XYs, run plotter.XYs) []plotter.XYs {
	if len(run) == 0 {
		return segs
	}
	return append(segs, run)
}

func legendWidth(l plot.Legend) vg.Length {
	r := l.Rectangle(draw.Canvas{})
	return r.Max.X - r.Min.X
}

// hourTicks labels every third hour and marks the others.
type hourTicks struct{}

func (hourTicks) Ticks(float64, float64) []plot.Tick {
	ticks := make([]plot.Tick, 0, HoursPerDay)
	for h := range HoursPerDay {
		t := plot.Tick{Value: float64(h)}
		if h%3 == 0 {
			t.Label = fmt.Sprintf("%02d", h)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// secondsTicks labels the y axis every "nice" step (1, 2, 5, 10, 15, 30 s …)
// so that five to ten values are readable, whatever the range.
type secondsTicks struct{}

func (secondsTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if !(span > 0) {
		return []plot.Tick{{Value: lo, Label: fmt.Sprintf("%g", lo)}}
	}
	step := 0.0
	for _, s := range []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600} {
		if span/s <= 10 {
			step = s
			break
		}
	}
	if step == 0 {
		step = span / 8
	}
	dec := 0
	for d := step; d < 1 && dec < 3; d *= 10 {
		dec++
	}
	var ticks []plot.Tick
	for k := math.Ceil(lo / step); k*step <= hi+step*1e-9; k++ {
		v := k * step
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', dec, 64)})
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
	labelled := map[int]bool{1: true, 2: true, 5: true}
	if last-first > 3 {
		labelled = map[int]bool{1: true}
	}
	var ticks []plot.Tick
	for k := first; k <= last; k++ {
		for m := 1; m <= 9; m++ {
			// Parsed from decimal so that 3e-1 is 0.3, not 0.30000000000000004.
			v, _ := strconv.ParseFloat(fmt.Sprintf("%de%d", m, k), 64)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if labelled[m] {
				t.Label = secsLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
