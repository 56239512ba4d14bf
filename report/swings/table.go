package swings

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

// TableWidth is the widest line WriteTable writes, in columns: the table fits
// a 100-column terminal.
const TableWidth = 100

// Table layout: an hour column, then per lane " | " and a cell of four
// right-aligned columns (med, worst, fail, days). Three lanes fit in
// TableWidth; more lanes are split into blocks of three, each with all 24 hours.
const (
	hourW         = 4
	medW, worstW  = 7, 7
	failW, daysW  = 8, 4
	cellW         = medW + 1 + worstW + 1 + failW + 1 + daysW
	laneSep       = " | "
	lanesPerBlock = (TableWidth - hourW) / (len(laneSep) + cellW)
	nameW         = 24 // lane column of the summary
	summaryFailW  = 11 // fail column of the summary
)

const tableTime = "2006-01-02 15:04"

// WriteTable writes the report as a fixed-width table no wider than
// TableWidth: a header, the 24 hours of day per block of lanes, then one
// summary line per lane (peak hour, quietest hour, swing). Missing values are "-".
func WriteTable(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	line := func(format string, args ...any) {
		fmt.Fprintln(bw, strings.TrimRight(fmt.Sprintf(format, args...), " "))
	}
	loc := r.location()
	line("lanewatch swings: queue time to first token by hour of day, in seconds")
	window := fmt.Sprintf("%d days", r.Days)
	if !r.From.IsZero() && !r.To.IsZero() {
		window = fmt.Sprintf("%s .. %s (%d days)", r.From.In(loc).Format(tableTime), r.To.In(loc).Format(tableTime), r.Days)
	}
	line("timezone %s; window %s", r.Timezone, window)
	if r.Records == 0 {
		line("records: none in the window")
	} else {
		line("records: %d hourly, %s .. %s", r.Records, r.First.In(loc).Format(tableTime), r.Last.In(loc).Format(tableTime))
	}
	line("med = median of the hourly worst queues, worst = their max, fail = failed/all probes (or %%),")
	line("days = days with a record at that hour; >x = at least x (a failed probe waited that long)")
	if len(r.Lanes) == 0 {
		line("")
		line("no lanes")
		return bw.Flush()
	}

	for start := 0; start < len(r.Lanes); start += lanesPerBlock {
		block := r.Lanes[start:min(start+lanesPerBlock, len(r.Lanes))]
		names, heads, rule := strings.Repeat(" ", hourW), fmt.Sprintf("%-*s", hourW, "hour"), strings.Repeat("-", hourW)
		for _, l := range block {
			names += laneSep + fmt.Sprintf("%-*s", cellW, laneLabel(l, cellW))
			heads += laneSep + fmt.Sprintf("%*s %*s %*s %*s", medW, "med", worstW, "worst", failW, "fail", daysW, "days")
			rule += "-+-" + strings.Repeat("-", cellW)
		}
		line("")
		line("%s", names)
		line("%s", heads)
		line("%s", rule)
		for h := range HoursPerDay {
			row := fmt.Sprintf("%-*s", hourW, fmt.Sprintf("%02d", h))
			for _, l := range block {
				st := l.Hours[h]
				row += laneSep + fmt.Sprintf("%*s %*s %*s %*s",
					medW, boundOrDash(st.MedianS, st.MedianCensored, st.HasQueue(), medW),
					worstW, boundOrDash(st.WorstS, st.Censored, st.HasQueue(), worstW),
					failW, failsOrDash(st.Failures, st.Samples, failW),
					daysW, intOrDash(st.Days))
			}
			line("%s", row)
		}
	}

	line("")
	line("%-*s %-11s   %-11s   %-15s   %s", nameW, "lane", "peak", "quietest", "swing", "fail")
	for _, l := range r.Lanes {
		s := l.Swing
		peak, quiet, swing := "-", "-", "-"
		note := ""
		if s.OK {
			peak = fmt.Sprintf("%02dh %7s", s.PeakHour, bound(s.PeakS, s.PeakCensored, 7))
			quiet = fmt.Sprintf("%02dh %7s", s.QuietHour, bound(s.QuietS, s.QuietCensored, 7))
			ratio := "-"
			if s.HasRatio {
				ratio = fitFloat(s.Ratio, 2, 6) + "x"
				if s.LowerBound {
					ratio = ">" + fitFloat(s.Ratio, 2, 5) + "x"
				}
			}
			swing = fmt.Sprintf("%7s %7s", bound(s.SwingS, s.LowerBound, 7), ratio)
		} else if l.Records == 0 {
			note = "  no data"
		} else {
			note = "  no ok probe"
		}
		line("%-*s %-11s   %-11s   %-15s   %s%s", nameW, truncate(l.Name, nameW), peak, quiet, swing, failsOrDash(l.Failures, l.Samples, summaryFailW), note)
	}
	return bw.Flush()
}

func (r *Report) location() *time.Location { return store.OrUTC(r.Location) }

// laneLabel is "name (kind)" when it fits in w columns, else the name, cut to w.
func laneLabel(l LaneReport, w int) string {
	if l.Kind != "" {
		if s := l.Name + " (" + l.Kind + ")"; len(s) <= w {
			return s
		}
	}
	return truncate(l.Name, w)
}

// truncate cuts s to w columns by eliding its middle with "...", so that
// names that differ only at the end stay apart. Lane names are ASCII.
func truncate(s string, w int) string {
	if len(s) <= w {
		return s
	}
	if w <= 3 {
		return s[:w]
	}
	head := (w - 3) / 2
	tail := w - 3 - head
	return s[:head] + "..." + s[len(s)-tail:]
}

// fitFloat formats x with dec decimals, or fewer, or as an exponent with
// one digit then none, taking the first that fits in w columns.
func fitFloat(x float64, dec, w int) string {
	var s string
	for d := dec; d >= 0; d-- {
		if s = strconv.FormatFloat(x, 'f', d, 64); len(s) <= w {
			return s
		}
	}
	for _, d := range []int{1, 0} {
		if s = strconv.FormatFloat(x, 'e', d, 64); len(s) <= w {
			return s
		}
	}
	return s
}

// bound formats seconds in w columns, as ">x" when x is a lower bound.
func bound(x float64, lower bool, w int) string {
	if lower {
		return ">" + fitFloat(x, 1, w-1)
	}
	return fitFloat(x, 1, w)
}

func boundOrDash(x float64, lower, ok bool, w int) string {
	if !ok {
		return "-"
	}
	return bound(x, lower, w)
}

// failsOrDash is "failed/all" when it fits in w columns, else the share of
// failed probes in percent, rounded up (so a single failure never shows as 0%).
func failsOrDash(failures, samples int64, w int) string {
	if samples == 0 {
		return "-"
	}
	if s := fmt.Sprintf("%d/%d", failures, samples); len(s) <= w {
		return s
	}
	pct := (failures*100 + samples - 1) / samples
	return strconv.FormatInt(pct, 10) + "%"
}

func intOrDash(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}
