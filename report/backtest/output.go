package backtest

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// WriteTable writes the report as text tables: the lookback sweep, the
// calibration per lookback (per hour of day too with byHour) and the
// decisions.
func WriteTable(w io.Writer, r *Report, byHour bool) error {
	bw := bufio.NewWriter(w)
	scored := 0
	if len(r.Calibration) > 0 {
		scored = r.Calibration[0].All.Probes
	}
	fmt.Fprintf(bw, "backtest of %s .. %s (%s): %d probes scored\n", stamp(r.From), stamp(r.To), r.Timezone, scored)
	fmt.Fprintf(bw, "warm-up from %s: its probes feed the history, unscored\n", stamp(r.ReadFrom))
	if r.Ignored > 0 {
		fmt.Fprintf(bw, "(%d probes of lanes not in the config left out)\n", r.Ignored)
	}
	if len(r.Calibration) > 1 {
		fmt.Fprintf(bw, "\nlookback sweep, all lanes (* the lowest median ratio at coverage >= %g, else the best coverage)\n", TargetCoverage)
		fmt.Fprintf(bw, "%-10s %8s %8s %8s %8s %7s %7s %8s %6s\n", "lookback", "probes", "ok", "coverage", "median×", "p90×", "f_elig", "f_inelig", "cens")
		for _, c := range r.Calibration {
			mark := ""
			if c.Best {
				mark = " *"
			}
			a := c.All.Counts
			fmt.Fprintf(bw, "%-10s %8d %8d %8s %8s %7s %7d %8d %6d\n", fmt.Sprintf("%d d%s", c.LookbackDays, mark),
				a.Probes, a.OK, fmtNum(a.Coverage, 3), fmtNum(a.MedianRatio, 2), fmtNum(a.P90Ratio, 2), a.FalseEligible, a.FalseIneligible, a.CensoredUncovered)
		}
	}
	for _, c := range r.Calibration {
		mark := ""
		if c.Best && len(r.Calibration) > 1 {
			mark = " (best)"
		}
		fmt.Fprintf(bw, "\ncalibration, lookback %s%s: does the next attempt wait at most next_queue_s?\n", days(c.LookbackDays), mark)
		fmt.Fprintf(bw, "%-16s %7s %7s %7s %8s %7s %7s %6s %8s %5s %6s\n",
			"lane", "probes", "ok", "covered", "coverage", "median×", "p90×", "f_elig", "f_inelig", "cens", "no_pol")
		row := func(name string, n Counts) {
			fmt.Fprintf(bw, "%-16s %7d %7d %7d %8s %7s %7s %6d %8d %5d %6d\n", clipName(name, 16),
				n.Probes, n.OK, n.Covered, fmtNum(n.Coverage, 3), fmtNum(n.MedianRatio, 2), fmtNum(n.P90Ratio, 2),
				n.FalseEligible, n.FalseIneligible, n.CensoredUncovered, n.NoPolicy)
		}
		hourRows := func(hs []HourCounts) {
			for _, h := range hs {
				if h.Probes > 0 {
					row(fmt.Sprintf("  %02d", h.Hour), h.Counts)
				}
			}
		}
		for _, l := range c.Lanes {
			row(l.Lane, l.Counts)
			if byHour {
				hourRows(l.Hours)
			}
		}
		row("all", c.All.Counts)
		if byHour {
			hourRows(c.All.Hours)
		}
	}
	fmt.Fprintf(bw, "\ndecisions: a job arrives %s before each probe of %s; naive retries %s,\n",
		time.Duration(r.ArrivalLeadS*float64(time.Second)), orDash(r.ArrivalLane), orDash(r.NaiveLane))
	fmt.Fprintf(bw, "paid retries %s; lanewatch follows the policy with lookback %s\n", orDash(r.PaidLane), days(r.DecisionLookback))
	if r.DroppedReplays > 0 {
		fmt.Fprintf(bw, "(%d replays left out: their deadline + 1 h passes the newest probe)\n", r.DroppedReplays)
	}
	fmt.Fprintf(bw, "%-16s %-10s %7s %7s %7s %9s %12s %10s %9s\n", "class", "strategy", "jobs", "met", "met %", "median s", "burned free", "paid USD", "attempts")
	for _, d := range r.Decisions {
		fmt.Fprintf(bw, "%-16s %-10s %7d %7d %7s %9s %12d %10s %9d\n", clipName(d.Class, 16), d.Strategy, d.Jobs, d.Met,
			strconv.FormatFloat(d.MetPct, 'f', 1, 64), fmtNum(d.MedianTimeS, 1), d.BurnedFreeTokens,
			strconv.FormatFloat(d.PaidUSD, 'f', 4, 64), d.Attempts)
	}
	if len(r.Decisions) == 0 {
		fmt.Fprintln(bw, "(no classes configured)")
	}
	writeBaselinesTable(bw, r)
	return bw.Flush()
}

func days(n int) string {
	if n == 1 {
		return "1 day"
	}
	return strconv.Itoa(n) + " days"
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04Z") }

func fmtNum(x *float64, prec int) string {
	if x == nil {
		return "-"
	}
	return strconv.FormatFloat(*x, 'f', prec, 64)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clipName(s string, n int) string {
	if len(s) > n {
		return s[:n-1] + "~"
	}
	return s
}

// WriteCSV writes the calibration as CSV, a row per lookback, lane and hour
// of day (and "all").
func WriteCSV(w io.Writer, r *Report, _ bool) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"lookback_days", "lane", "hour", "probes", "ok", "covered", "coverage", "median_ratio", "p90_ratio",
		"false_eligible", "false_ineligible", "no_policy", "censored_uncovered", "best"})
	opt := func(x *float64) string {
		if x == nil {
			return ""
		}
		return strconv.FormatFloat(*x, 'f', -1, 64)
	}
	for _, c := range r.Calibration {
		row := func(lane, hour string, n Counts) {
			_ = cw.Write([]string{strconv.Itoa(c.LookbackDays), lane, hour, strconv.Itoa(n.Probes), strconv.Itoa(n.OK),
				strconv.Itoa(n.Covered), opt(n.Coverage), opt(n.MedianRatio), opt(n.P90Ratio),
				strconv.Itoa(n.FalseEligible), strconv.Itoa(n.FalseIneligible), strconv.Itoa(n.NoPolicy),
				strconv.Itoa(n.CensoredUncovered), strconv.FormatBool(c.Best)})
		}
		lane := func(name string, all Counts, hs []HourCounts) {
			row(name, "all", all)
			for _, h := range hs {
				row(name, fmt.Sprintf("%02d", h.Hour), h.Counts)
			}
		}
		for _, l := range c.Lanes {
			lane(l.Lane, l.Counts, l.Hours)
		}
		lane("all", c.All.Counts, c.All.Hours)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return writeBaselinesCSV(w, r)
}

// WriteJSON writes the report as indented JSON, without the per-hour
// calibration unless byHour.
func WriteJSON(w io.Writer, r *Report, byHour bool) error {
	out := *r
	if !byHour {
		out.Calibration = make([]Calibration, len(r.Calibration))
		for i, c := range r.Calibration {
			c.Lanes = append([]LaneCalibration(nil), c.Lanes...)
			for j := range c.Lanes {
				c.Lanes[j].Hours = nil
			}
			c.All.Hours = nil
			out.Calibration[i] = c
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
