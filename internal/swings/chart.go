package swings

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
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

// WriteChart draws the report as a line chart in format ("svg" or "png"):
// hour of day on x, seconds on y, per lane a solid line with dots for the
// median of the hourly worsts, a lighter dashed line for the worst, and a
// cross at each hour of day that had failed probes. Hours without an ok probe
// break the lines. The legend, right of the plot, has one entry per lane.
func WriteChart(w io.Writer, r *Report, format string) error {
	p, legend, err := chart(r)
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
	lw := legendWidth(legend)
	pad := vg.Points(10)
	p.Draw(draw.Crop(dc, 0, -(lw + 2*pad), 0, 0))
	legend.Draw(draw.Crop(dc, chartW-lw-pad, -pad, 0, -3*pad))
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	return nil
}

var (
	gray      = color.RGBA{R: 90, G: 90, B: 90, A: 255}
	gridColor = color.RGBA{R: 225, G: 225, B: 225, A: 255}
)

// laneColor is a dark palette color; the worst line is the same color, lighter.
func laneColor(i int) color.Color { return plotutil.DarkColors[i%len(plotutil.DarkColors)] }

// dotShapes tell lanes apart once the colors repeat (never a cross: that
// marks failures).
var dotShapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}}

func laneShape(i int) draw.GlyphDrawer {
	return dotShapes[(i/len(plotutil.DarkColors))%len(dotShapes)]
}

// legendNameW caps a lane name in the legend so the plot keeps its width.
const legendNameW = 32

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
func chart(r *Report) (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Queue time to first token by hour of day\nlast %d days, %s", r.Days, r.Timezone)
	if !r.To.IsZero() {
		p.Title.Text = fmt.Sprintf("Queue time to first token by hour of day\n%d days to %s (%s)", r.Days, r.To.In(r.location()).Format(tableTime), r.Timezone)
	}
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = fmt.Sprintf("hour of day (%s)", r.Timezone)
	p.Y.Label.Text = "seconds before the first token"
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.X.Min, p.X.Max = -0.5, HoursPerDay-0.5
	p.X.Tick.Marker = hourTicks{}
	p.Y.Tick.Marker = secondsTicks{}
	p.Y.Min = 0
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

	top := 0.0
	for i, l := range r.Lanes {
		c := laneColor(i)
		var med, fails plotter.XYs
		var medSegs, worstSegs []plotter.XYs
		var fromMed, fromWorst plotter.XYs
		for _, h := range l.Hours {
			x := float64(h.Hour)
			if h.HasQueue() {
				pt := plotter.XY{X: x, Y: h.MedianS}
				med = append(med, pt)
				fromMed = append(fromMed, pt)
				fromWorst = append(fromWorst, plotter.XY{X: x, Y: h.WorstS})
				top = max(top, h.WorstS)
			} else {
				medSegs, worstSegs = appendSeg(medSegs, fromMed), appendSeg(worstSegs, fromWorst)
				fromMed, fromWorst = nil, nil
			}
			if h.Failures > 0 {
				y := 0.0
				if h.HasQueue() {
					y = h.MedianS
				}
				fails = append(fails, plotter.XY{X: x, Y: y})
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
		if len(med) > 0 {
			s, err := plotter.NewScatter(med)
			if err != nil {
				return nil, legend, fmt.Errorf("chart: %w", err)
			}
			s.GlyphStyle = dotStyle(c, laneShape(i))
			p.Add(s)
		}
		if len(fails) > 0 {
			s, err := plotter.NewScatter(fails)
			if err != nil {
				return nil, legend, fmt.Errorf("chart: %w", err)
			}
			s.GlyphStyle = failStyle(c)
			p.Add(s)
		}

		name := truncate(l.Name, legendNameW)
		switch {
		case l.Records == 0:
			name += " (no data)"
		case !l.Swing.OK:
			name += " (no ok probe)"
		}
		legend.Add(name, medLine, dots)
	}
	if top <= 0 {
		top = 1
	}
	p.Y.Max = top * 1.08

	// Key to the line styles, shared by every lane.
	legend.Add("")
	legend.Add("median of hourly worsts", &plotter.Line{LineStyle: medianStyle(gray)}, &plotter.Scatter{GlyphStyle: dotStyle(gray, draw.CircleGlyph{})})
	legend.Add("worst (max)", &plotter.Line{LineStyle: worstStyle(gray)})
	legend.Add("hour with failed probes", &plotter.Scatter{GlyphStyle: failStyle(gray)})
	return p, legend, nil
}

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
