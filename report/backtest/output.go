package backtest

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// WriteTable writes the report as text tables: the sweep, the calibration
// per entry (per hour of day too with byHour) and the decisions. In the
// extended shape the sweep is per kind of lane, never mixing them, with
// coverage_all and the oracle's comparison when the run had the truth.
func WriteTable(w io.Writer, r *Report, byHour bool) error {
	ext := r.extended()
	bw := bufio.NewWriter(w)
	scored := 0
	if ext { // r.Calibration[0] exists: one has a rule
		for _, k := range r.Calibration[0].Kinds {
			scored += k.Probes
		}
		fmt.Fprintf(bw, "backtest of %s .. %s (%s): %d probes scored (%s)\n", stamp(r.From), stamp(r.To), r.Timezone, scored, r.Calibration[0].name())
		fmt.Fprintf(bw, "read from %s; a lane's probes are scored once it has its warm-up of history\n", stamp(r.ReadFrom))
	} else {
		if len(r.Calibration) > 0 {
			scored = r.Calibration[0].All.Probes
		}
		fmt.Fprintf(bw, "backtest of %s .. %s (%s): %d probes scored\n", stamp(r.From), stamp(r.To), r.Timezone, scored)
		fmt.Fprintf(bw, "warm-up from %s: its probes feed the history, unscored\n", stamp(r.ReadFrom))
	}
	if r.Ignored > 0 {
		fmt.Fprintf(bw, "(%d probes of lanes not in the config left out)\n", r.Ignored)
	}
	if ext {
		writeSweepByKind(bw, r)
	} else if len(r.Calibration) > 1 {
		fmt.Fprintf(bw, "\nlookback sweep, all lanes (* the lowest median ratio at coverage >= %g, else the best coverage)\n", TargetCoverage)
		fmt.Fprintf(bw, "%-10s %8s %8s %8s %8s %7s %7s %8s %6s\n", "lookback", "probes", "ok", "coverage", "median×", "p90×", "f_elig", "f_inelig", "cens")
		for _, c := range r.Calibration {
			a := c.All.Counts
			fmt.Fprintf(bw, "%-10s %8d %8d %8s %8s %7s %7d %8d %6d\n", fmt.Sprintf("%d d%s", c.LookbackDays, when(c.Best, " *")),
				a.Probes, a.OK, fmtNum(a.Coverage, 3), fmtNum(a.MedianRatio, 2), fmtNum(a.P90Ratio, 2), a.FalseEligible, a.FalseIneligible, a.CensoredUncovered)
		}
	}
	for _, c := range r.Calibration {
		mark := when(c.Best && len(r.Calibration) > 1, " (best)")
		title := "lookback " + days(c.LookbackDays)
		if ext {
			title = c.name()
		}
		fmt.Fprintf(bw, "\ncalibration, %s%s: does the next attempt wait at most next_queue_s?\n", title, mark)
		fmt.Fprintf(bw, "%-16s %7s %7s %7s %8s%s %7s %7s %6s %8s %5s %6s\n",
			"lane", "probes", "ok", "covered", "coverage", when(ext, " cov_all"), "median×", "p90×", "f_elig", "f_inelig", "cens", "no_pol")
		row := func(name string, n Counts) {
			fmt.Fprintf(bw, "%-16s %7d %7d %7d %8s%s %7s %7s %6d %8d %5d %6d\n", clipName(name, 16), n.Probes, n.OK, n.Covered, fmtNum(n.Coverage, 3),
				when(ext, fmt.Sprintf(" %7s", fmtNum(n.CoverageAll, 3))), fmtNum(n.MedianRatio, 2), fmtNum(n.P90Ratio, 2),
				n.FalseEligible, n.FalseIneligible, n.CensoredUncovered, n.NoPolicy)
		}
		rows := func(name string, n Counts, hs []HourCounts) {
			row(name, n)
			for _, h := range hs {
				if byHour && h.Probes > 0 {
					row(fmt.Sprintf("  %02d", h.Hour), h.Counts)
				}
			}
		}
		for _, l := range c.Lanes {
			rows(l.Lane, l.Counts, l.Hours)
		}
		if !ext {
			rows("all", c.All.Counts, c.All.Hours)
		}
		for _, k := range c.Kinds {
			rows(k.Kind+" lanes", k.Counts, k.Hours)
		}
	}
	decision := "with lookback " + days(r.DecisionLookback)
	if ext {
		decision = days(r.DecisionLookback)
		if r.DecisionRule != "" {
			decision = r.DecisionRule + ", lookback " + decision
			decision += when(r.DecisionCoverage != nil, ", coverage "+optNum(r.DecisionCoverage))
		}
		decision = "(" + decision + ")"
	}
	fmt.Fprintf(bw, "\ndecisions: a job arrives %s before each probe of %s; naive retries %s,\n",
		time.Duration(r.ArrivalLeadS*float64(time.Second)), orDash(r.ArrivalLane), orDash(r.NaiveLane))
	fmt.Fprintf(bw, "paid retries %s; lanewatch follows the policy %s\n", orDash(r.PaidLane), decision)
	if r.DroppedReplays > 0 {
		fmt.Fprintf(bw, "(%d replays left out: their deadline + 1 h passes the newest probe)\n", r.DroppedReplays)
	}
	fmt.Fprintf(bw, "%-16s %-10s %7s %7s %7s %9s %12s %10s %9s\n", "class", "strategy", "jobs", "met", "met %", "median s", "burned free", "paid USD", "attempts")
	for _, d := range r.Decisions {
		fmt.Fprintf(bw, "%-16s %-10s %7d %7d %7.1f %9s %12d %10.4f %9d\n", clipName(d.Class, 16), d.Strategy, d.Jobs, d.Met,
			d.MetPct, fmtNum(d.MedianTimeS, 1), d.BurnedFreeTokens, d.PaidUSD, d.Attempts)
	}
	if len(r.Decisions) == 0 {
		fmt.Fprintln(bw, "(no classes configured)")
	}
	writeBaselinesTable(bw, r)
	return bw.Flush()
}

// extended says whether r has the extended shape (a rule per calibration).
func (r *Report) extended() bool {
	return slices.ContainsFunc(r.Calibration, func(c Calibration) bool { return c.Rule != "" })
}

// name names a calibration: "calibrated 14 d @0.95", "max 7 d".
func (c *Calibration) name() string {
	return fmt.Sprintf("%s %d d", c.Rule, c.LookbackDays) + when(c.TargetCoverage != nil, " @"+optNum(c.TargetCoverage))
}

// writeSweepByKind writes the extended shape's sweep, per kind of lane, and the
// oracle's comparison when the run had the truth.
func writeSweepByKind(bw *bufio.Writer, r *Report) {
	best := "" // the kind Best is chosen on: free, else paid
	for _, kind := range []string{"free", "paid"} {
		if !slices.ContainsFunc(r.Calibration, func(c Calibration) bool { return c.kind(kind) != nil }) {
			continue
		}
		best = cmp.Or(best, kind)
		fmt.Fprintf(bw, "\nsweep, %s lanes (* the lowest median ratio at coverage_all >= %g, else the best coverage_all)\n", kind, TargetCoverage)
		fmt.Fprintf(bw, "%-24s %7s %7s %7s %8s %8s %7s %7s %6s %8s %5s\n", "rule", "warm-up", "probes", "ok", "coverage", "cov_all", "median×", "p90×", "f_elig", "f_inelig", "cens")
		for _, c := range r.Calibration {
			k := c.kind(kind)
			if k == nil {
				continue
			}
			fmt.Fprintf(bw, "%-24s %7s %7d %7d %8s %8s %7s %7s %6d %8d %5d\n", c.name()+when(c.Best && kind == best, " *"), fmt.Sprintf("%d d", c.WarmupDays),
				k.Probes, k.OK, fmtNum(k.Coverage, 3), fmtNum(k.CoverageAll, 3), fmtNum(k.MedianRatio, 2), fmtNum(k.P90Ratio, 2),
				k.FalseEligible, k.FalseIneligible, k.CensoredUncovered)
		}
	}
	if !slices.ContainsFunc(r.Calibration, func(c Calibration) bool {
		return slices.ContainsFunc(c.Kinds, func(k KindCalibration) bool { return k.Oracle != nil })
	}) {
		return
	}
	fmt.Fprintf(bw, "\noracle (the truth's median × exp(sigma·z)): its median ratio at the rule's coverage_all, the rule's over it;\n")
	fmt.Fprintf(bw, "misses: the rule's, and the oracle's at the rule's target coverage (max: %g)\n", TargetCoverage)
	fmt.Fprintf(bw, "%-24s %-5s %7s %8s %8s %8s %7s %8s %8s\n", "rule", "kind", "probes", "cov_all", "oracle×", "÷oracle", "misses", "o_misses", "o_cov")
	for _, c := range r.Calibration {
		for _, k := range c.Kinds {
			if o := k.Oracle; o != nil {
				fmt.Fprintf(bw, "%-24s %-5s %7d %8.4f %8s %8s %7d %8d %8.4f\n", c.name(), k.Kind, o.Probes,
					o.Coverage, fmtNum(o.OracleMedianRatio, 3), fmtNum(o.RatioToOracle, 3), o.Misses, o.OracleMisses, o.OracleCoverage)
			}
		}
	}
}

// kind returns the calibration of the lanes of one kind, nil without any.
func (c *Calibration) kind(kind string) *KindCalibration {
	for i := range c.Kinds {
		if c.Kinds[i].Kind == kind {
			return &c.Kinds[i]
		}
	}
	return nil
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

// when is s when cond holds, else "".
func when(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
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

// WriteCSV writes the calibration as CSV, a row per entry, lane and hour
// of day (and "all"), then the baselines. In the extended shape an entry
// is a rule, lookback and target coverage, with coverage_all, and the rows
// per kind ("kind:free") replace those of all lanes.
func WriteCSV(w io.Writer, r *Report, _ bool) error {
	ext := r.extended()
	cw := csv.NewWriter(w)
	head := []string{"lookback_days", "lane", "hour", "probes", "ok", "covered", "coverage"}
	if ext {
		head = []string{"rule", "lookback_days", "target_coverage", "warmup_days", "lane", "hour", "probes", "ok", "covered", "coverage", "coverage_all"}
	}
	_ = cw.Write(append(head, "median_ratio", "p90_ratio", "false_eligible", "false_ineligible", "no_policy", "censored_uncovered", "best"))
	for _, c := range r.Calibration {
		row := func(lane, hour string, n Counts) {
			rec := []string{strconv.Itoa(c.LookbackDays), lane, hour}
			if ext {
				rec = []string{c.Rule, strconv.Itoa(c.LookbackDays), optNum(c.TargetCoverage), strconv.Itoa(c.WarmupDays), lane, hour}
			}
			rec = append(rec, strconv.Itoa(n.Probes), strconv.Itoa(n.OK), strconv.Itoa(n.Covered), optNum(n.Coverage))
			if ext {
				rec = append(rec, optNum(n.CoverageAll))
			}
			_ = cw.Write(append(rec, optNum(n.MedianRatio), optNum(n.P90Ratio), strconv.Itoa(n.FalseEligible), strconv.Itoa(n.FalseIneligible),
				strconv.Itoa(n.NoPolicy), strconv.Itoa(n.CensoredUncovered), strconv.FormatBool(c.Best)))
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
		if !ext {
			lane("all", c.All.Counts, c.All.Hours)
		}
		for _, k := range c.Kinds {
			lane("kind:"+k.Kind, k.Counts, k.Hours)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return writeBaselinesCSV(w, r)
}

// optNum writes x in full, "" for nil.
func optNum(x *float64) string {
	if x == nil {
		return ""
	}
	return strconv.FormatFloat(*x, 'f', -1, 64)
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
			c.Kinds = append([]KindCalibration(nil), c.Kinds...)
			for j := range c.Kinds {
				c.Kinds[j].Hours = nil
			}
			out.Calibration[i] = c
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
