package swings

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// CSVHeader is the header row of WriteCSV (docs/deploy.md); columns are
// only ever added at the end.
var CSVHeader = []string{"lane", "kind", "hour", "median_s", "worst_s", "measured", "days", "samples", "failures", "censored", "median_censored"}

// WriteCSV writes one row per lane and hour of day, lanes in report order.
// A failed write sticks (bufio): Error reports it at the end.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader)
	for _, l := range r.Lanes {
		for _, h := range l.Hours {
			med, worst := "", ""
			if h.HasQueue() {
				med = strconv.FormatFloat(h.MedianS, 'f', 3, 64)
				worst = strconv.FormatFloat(h.WorstS, 'f', 3, 64)
			}
			_ = cw.Write([]string{
				l.Name, l.Kind, strconv.Itoa(h.Hour), med, worst,
				strconv.Itoa(h.Measured), strconv.Itoa(h.Days),
				strconv.FormatInt(h.Samples, 10), strconv.FormatInt(h.Failures, 10),
				strconv.FormatBool(h.HasQueue() && h.Censored), strconv.FormatBool(h.HasQueue() && h.MedianCensored),
			})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	return nil
}

// JSONReport is the document WriteJSON writes (field names are a contract).
// Seconds are rounded to milliseconds; a missing value is null.
type JSONReport struct {
	Timezone string     `json:"timezone"`
	From     string     `json:"from"` // RFC 3339 in the report's timezone, "" if unbounded
	To       string     `json:"to"`
	Days     int        `json:"days"`
	First    *string    `json:"first_record"` // earliest record hour in the window
	Last     *string    `json:"last_record"`
	Records  int        `json:"records"`
	Lanes    []JSONLane `json:"lanes"`
}

// JSONLane is one lane of a JSONReport.
type JSONLane struct {
	Name      string     `json:"name"`
	Kind      string     `json:"kind"`
	Records   int        `json:"records"`
	Samples   int64      `json:"samples"`
	Failures  int64      `json:"failures"`
	PeakHour  *int       `json:"peak_hour"`
	PeakS     *float64   `json:"peak_median_s"`
	QuietHour *int       `json:"quiet_hour"`
	QuietS    *float64   `json:"quiet_median_s"`
	SwingS    *float64   `json:"swing_s"`
	Ratio     *float64   `json:"swing_ratio"`
	Hours     []JSONHour `json:"hours"` // always 24, hour 0 first
	// Lower bounds (Swing's).
	PeakCensored  bool `json:"peak_censored"`
	QuietCensored bool `json:"quiet_censored"`
	SwingCensored bool `json:"swing_censored"`
}

// JSONHour is one hour of day of a JSONLane.
type JSONHour struct {
	Hour     int      `json:"hour"`
	MedianS  *float64 `json:"median_s"`
	WorstS   *float64 `json:"worst_s"`
	Measured int      `json:"measured"`
	Days     int      `json:"days"`
	Samples  int64    `json:"samples"`
	Failures int64    `json:"failures"`
	// Lower bounds (HourStat's): a failed probe waited at least that long.
	Censored       bool `json:"censored"`
	MedianCensored bool `json:"median_censored"`
}

// WriteJSON writes the report as one indented JSON document (see JSONReport).
func WriteJSON(w io.Writer, r *Report) error {
	loc := r.location()
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.In(loc).Format(time.RFC3339)
	}
	out := JSONReport{
		Timezone: r.Timezone, From: stamp(r.From), To: stamp(r.To), Days: r.Days,
		Records: r.Records, Lanes: []JSONLane{},
	}
	if r.Records > 0 {
		out.First, out.Last = new(stamp(r.First)), new(stamp(r.Last))
	}
	for _, l := range r.Lanes {
		jl := JSONLane{Name: l.Name, Kind: l.Kind, Records: l.Records, Samples: l.Samples, Failures: l.Failures}
		if s := l.Swing; s.OK {
			jl.PeakHour, jl.PeakS = new(s.PeakHour), ms(s.PeakS)
			jl.QuietHour, jl.QuietS = new(s.QuietHour), ms(s.QuietS)
			jl.SwingS = ms(s.SwingS)
			jl.PeakCensored, jl.QuietCensored, jl.SwingCensored = s.PeakCensored, s.QuietCensored, s.LowerBound
			if s.HasRatio {
				jl.Ratio = new(math.Round(s.Ratio*1000) / 1000)
			}
		}
		for _, h := range l.Hours {
			jh := JSONHour{Hour: h.Hour, Measured: h.Measured, Days: h.Days, Samples: h.Samples, Failures: h.Failures}
			if h.HasQueue() {
				jh.MedianS, jh.WorstS = ms(h.MedianS), ms(h.WorstS)
				jh.Censored, jh.MedianCensored = h.Censored, h.MedianCensored
			}
			jl.Hours = append(jl.Hours, jh)
		}
		out.Lanes = append(out.Lanes, jl)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("json: %w", err)
	}
	return nil
}

// ms rounds seconds to milliseconds.
func ms(x float64) *float64 { return new(math.Round(x*1000) / 1000) }
