package app

// This file builds what the sampler needs from a configuration.

import (
	"io"
	"time"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/series"
)

// SwingsChart draws the sampler's status page chart (a sampler.Chart): the
// time-of-day swings of the config's lanes and its classes' deadlines.
type SwingsChart struct{ Config *config.Config }

// WriteChart writes the swings chart of the hourly records of [from, to),
// days days long, as an SVG document.
func (c SwingsChart) WriteChart(w io.Writer, hourly []series.Hourly, from, to time.Time, days int) error {
	return swings.WriteChart(w, Swings(c.Config, hourly, from, to, days, false), swings.ChartOptions{Format: "svg"})
}
