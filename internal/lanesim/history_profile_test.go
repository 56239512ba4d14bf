package lanesim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lanewatch/lanewatch/store"
)

// harshGolden is the sha256 of the probes the harsh profile generated
// before profiles existed (fmt.Sprint of each probe, one a line), for
// the options of TestHistoryHarshUnchanged: the default profile must stay
// byte-identical for a seed.
const harshGolden = "46233501e5768f011a4d356cf882858ccff37c39e416d0bf88f7fee43b1bd049"

func probesHash(t *testing.T, opts HistoryOptions) string {
	t.Helper()
	h := sha256.New()
	for _, p := range genHistory(t, opts) {
		fmt.Fprintln(h, p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestHistoryHarshUnchanged(t *testing.T) {
	opts := HistoryOptions{Start: histStart, Days: 30, Seed: 11,
		Lanes: []HistoryLane{{"free", "free"}, {"free2", "free"}, {"paid", "paid"}}}
	if got := probesHash(t, opts); got != harshGolden {
		t.Errorf("harsh history of seed 11: sha256 %s, want %s", got, harshGolden)
	}
}

func genTruth(t *testing.T, opts HistoryOptions) ([]store.Probe, []ProbeTruth) {
	t.Helper()
	var ps []store.Probe
	var ts []ProbeTruth
	if err := History(opts, func(day []store.Probe, truth []ProbeTruth) error {
		if len(day) != len(truth) {
			t.Fatalf("%d probes, %d truths", len(day), len(truth))
		}
		ps, ts = append(ps, day...), append(ts, truth...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ps, ts
}

// TestHistoryTruthMatchesProbes checks, per profile, lane and hour of day
// over a year, that the truth describes what the probes drew: the probes'
// empirical median queue is the median of their true medians, half of them
// wait at most their true median and 95 % at most their true p95 (median ×
// exp(1.645 σ)), each within 4 standard errors. Outage probes and 429s are left out (their
// queue_s is not a draw); a timeout counts as a wait above both.
func TestHistoryTruthMatchesProbes(t *testing.T) {
	for _, tc := range []struct {
		profile    string
		paidFaults bool
	}{{"harsh", false}, {"mild", false}, {"mild", true}, {"harsh", true},
		{"known-flat", true}, {"known-peak", true}, {"sparse", true}, {"upstream", true}} {
		t.Run(fmt.Sprintf("%s/paid_faults=%v", tc.profile, tc.paidFaults), func(t *testing.T) {
			ps, ts := genTruth(t, HistoryOptions{Start: histStart, Days: 365, Seed: 5, Profile: tc.profile, PaidFaults: tc.paidFaults,
				Lanes: []HistoryLane{{"free", "free"}, {"free2", "free"}, {"paid", "paid"}}})
			type cell struct {
				lane string
				hour int
			}
			type acc struct {
				queues, medians      []float64
				sigma                float64
				n, belowMed, below95 int
			}
			cells := map[cell]*acc{}
			for i, p := range ps {
				tr := ts[i]
				if !tr.Time.Equal(p.Time) || tr.Lane != p.Lane || tr.MedianS <= 0 || tr.Sigma <= 0 {
					t.Fatalf("probe %d: %+v, truth %+v", i, p, tr)
				}
				if tr.Outage || p.Outcome == "rate_limited" {
					continue
				}
				k := cell{p.Lane, p.Time.Hour()}
				a := cells[k]
				if a == nil {
					a = &acc{}
					cells[k] = a
				}
				q := p.QueueS
				if !p.OK {
					q = math.Inf(1) // a timeout: longer than the timeout, or a paid failure's known wait
					if p.Outcome != "timeout" {
						q = p.QueueS
					}
				}
				a.queues, a.medians = append(a.queues, q), append(a.medians, tr.MedianS)
				a.n++
				a.sigma = max(a.sigma, tr.Sigma)
				if q <= tr.MedianS {
					a.belowMed++
				}
				if q <= tr.MedianS*math.Exp(1.6449*tr.Sigma) {
					a.below95++
				}
			}
			if len(cells) != 3*24 {
				t.Fatalf("%d lane-hour cells, want 72", len(cells))
			}
			median := func(xs []float64) float64 {
				s := slices.Clone(xs)
				slices.Sort(s)
				return s[len(s)/2]
			}
			prof, _ := ProfileNamed(tc.profile)
			for k, a := range cells {
				emp, tru := median(a.queues), median(a.medians)
				half, p95 := float64(a.belowMed)/float64(a.n), float64(a.below95)/float64(a.n)
				// Standard errors: of a median in log space (1.25 σ/√n, σ
				// the spread of the draws around the hour's median, the
				// day factor's included), and of a share.
				rootN := math.Sqrt(float64(a.n))
				seLog := 1.2533 * math.Hypot(a.sigma, prof.DaySigma) / rootN
				if math.Abs(math.Log(emp/tru)) > 4*seLog || math.Abs(half-0.5) > 4*0.5/rootN || math.Abs(p95-0.95) > 4*math.Sqrt(0.95*0.05)/rootN {
					t.Errorf("%s at %02dh (%d probes): empirical median %.3f s, true %.3f s; %.3f at most the true median, %.3f at most the true p95",
						k.lane, k.hour, a.n, emp, tru, half, p95)
				}
			}
		})
	}
}

// TestHistoryMildFigures checks the mild profile against the published
// figures it is calibrated to (MildProfile), over a year of three free
// lanes: the night median 30-40 % below the peak's, the peak's p95 about
// 2.4× its median, the decode rate swinging at most 40 % over a day, and
// every free lane's median within 0.44-1.6 s at every hour.
func TestHistoryMildFigures(t *testing.T) {
	ps := genHistory(t, HistoryOptions{Start: histStart, Days: 365, Seed: 9, Profile: "mild",
		Lanes: []HistoryLane{{"free", "free"}, {"free2", "free"}, {"free3", "free"}, {"paid", "paid"}}})
	type cell struct {
		lane string
		hour int
	}
	queues, rates := map[cell][]float64{}, map[cell][]float64{}
	for _, p := range ps {
		if p.Kind != "free" || !p.OK {
			continue
		}
		k := cell{p.Lane, p.Time.Hour()}
		queues[k] = append(queues[k], p.QueueS)
		rates[k] = append(rates[k], float64(p.Tokens)/p.GenS)
	}
	quantile := func(xs []float64, q float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[int(q*float64(len(s)-1))]
	}
	for _, lane := range []string{"free", "free2", "free3"} {
		night, peak := quantile(queues[cell{lane, 3}], 0.5), quantile(queues[cell{lane, 13}], 0.5)
		if faster := 1 - night/peak; faster < 0.30 || faster > 0.40 {
			t.Errorf("%s: median %.3f s at 03h, %.3f s at 13h: off-peak %.0f %% faster, want 30-40 %%", lane, night, peak, 100*faster)
		}
		if r := quantile(queues[cell{lane, 13}], 0.95) / peak; r < 2.2 || r > 2.6 {
			t.Errorf("%s: p95 at the peak %.2f× the median, want about 2.4", lane, r)
		}
		if swing := 1 - quantile(rates[cell{lane, 13}], 0.5)/quantile(rates[cell{lane, 3}], 0.5); swing < 0.25 || swing > 0.40 {
			t.Errorf("%s: decode rate %.0f %% lower at the peak, want a swing of up to 40 %%", lane, 100*swing)
		}
		for h := range 24 {
			if m := quantile(queues[cell{lane, h}], 0.5); m < 0.42 || m > 1.65 {
				t.Errorf("%s: median %.3f s at %02dh, want 0.44-1.6 s", lane, m, h)
			}
		}
	}
}

// TestHistoryPaidFaults checks the paid lane's queue and failures with
// PaidFaults, and that the free lanes do not change with it.
func TestHistoryPaidFaults(t *testing.T) {
	opts := HistoryOptions{Start: histStart, Days: 365, Seed: 3, Lanes: []HistoryLane{{"free", "free"}, {"paid", "paid"}}}
	plain := genHistory(t, opts)
	opts.PaidFaults = true
	faults := genHistory(t, opts)
	var failed, paid, busy int
	var freeA, freeB []store.Probe
	for _, p := range plain {
		if p.Lane == "free" {
			freeA = append(freeA, p)
		}
	}
	for _, p := range faults {
		if p.Lane == "free" {
			freeB = append(freeB, p)
			continue
		}
		paid++
		if !p.OK {
			failed++
			if p.Outcome != "http_error" || p.Status != 503 || p.QueueS <= 0 {
				t.Fatalf("failed paid probe %+v: want http_error 503 after a wait", p)
			}
		}
		if p.QueueS > 0.6*4*0.8 { // a busy hour's median is 2.4 s at least, a quiet hour's p99.9 under 1.8 s
			busy++
		}
	}
	if !slices.EqualFunc(freeA, freeB, func(a, b store.Probe) bool { return a == b }) {
		t.Error("PaidFaults changed the free lane")
	}
	if share := float64(failed) / float64(paid); share < 0.001 || share > 0.0035 {
		t.Errorf("paid failures: %.3f %% of probes, want about 0.2 %%", 100*share)
	}
	if share := float64(busy) / float64(paid); share < 0.003 || share > 0.02 {
		t.Errorf("paid probes of busy hours: %.2f %%, want about 1 %%", 100*share)
	}
}

func TestProfileNamed(t *testing.T) {
	for _, tc := range []struct{ name, want string }{{"", "harsh"}, {"harsh", "harsh"}, {"mild", "mild"}} {
		if p, err := ProfileNamed(tc.name); err != nil || p.Name != tc.want {
			t.Errorf("ProfileNamed(%q) = %s, %v; want %s", tc.name, p.Name, err, tc.want)
		}
	}
	if _, err := ProfileNamed("gentle"); err == nil || err.Error() != `profile "gentle": want one of `+ProfileNames() {
		t.Errorf("ProfileNamed(gentle): %v", err)
	}
	err := History(HistoryOptions{Days: 1, Profile: "gentle", Lanes: []HistoryLane{{"a", "free"}}}, func([]store.Probe, []ProbeTruth) error { return nil })
	if err == nil {
		t.Error("History with an unknown profile: no error")
	}
}
