package policy

import (
	"bytes"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"fmt"

	"github.com/lanewatch/lanewatch/probe"
	"github.com/lanewatch/lanewatch/sampler/budget"
	"github.com/lanewatch/lanewatch/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// at returns the start of a wall-clock hour in loc; it fails the test if the
// hour does not exist there.
func at(t testing.TB, loc *time.Location, y int, m time.Month, d, h int) time.Time {
	t.Helper()
	hr := time.Date(y, m, d, h, 0, 0, 0, loc)
	if hr.Hour() != h {
		t.Fatalf("%d-%02d-%02dT%02d does not exist in %s", y, m, d, h, loc)
	}
	return hr
}

// r is a record with three probes whose last one started 47m03s into the hour.
func r(lane, kind string, hour time.Time, queue, tok float64) store.Hourly {
	return store.Hourly{Lane: lane, Kind: kind, Hour: hour, WorstQueueS: queue, WorstGenS: 1, MinTokPerS: tok, Samples: 3}
}

// lastSampleAt is when a test record's last probe started: 47m03.25s into its hour.
const lastSampleAt = 47*time.Minute + 3*time.Second + 250*time.Millisecond

// statesBefore is what the store's newest probes say of the records before
// end: each lane's last probe started lastSampleAt into its newest hour.
func statesBefore(recs []store.Hourly, end time.Time) []LaneState {
	last := map[string]time.Time{}
	for _, r := range recs {
		if r.Samples > 0 && r.Hour.Before(end) && r.Hour.Add(lastSampleAt).After(last[r.Lane]) {
			last[r.Lane] = r.Hour.Add(lastSampleAt)
		}
	}
	var out []LaneState
	for l, t := range last {
		out = append(out, LaneState{Lane: l, LastSample: t})
	}
	return out
}

// forHour is ForHour with the lane states the records imply.
func forHour(p Params, recs []store.Hourly, hour time.Time) File {
	return ForHour(p, recs, statesBefore(recs, store.HourStart(hour, p.Location).Add(time.Hour)), hour)
}

// forecast is Forecast with the lane states the records imply.
func forecast(p Params, recs []store.Hourly, day time.Time) []File {
	return ForecastProbes(p, recs, nil, statesBefore(recs, store.DayStart(day, p.Location)), day)
}

var classes = []ClassSpec{
	{Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 800, PaidUSDPer1k: 0.002},
	{Name: "batch", DeadlineS: 600, CeilingTokens: 20000, EstTokens: 4000, PaidUSDPer1k: 0.001},
	{Name: "tight", DeadlineS: 1, CeilingTokens: 1000, EstTokens: 100, PaidUSDPer1k: 0.002},
}

// utcScenario: every lane state the policy knows, in UTC.
func utcScenario(t testing.TB) (Params, []store.Hourly, time.Time) {
	loc := time.UTC
	h := at(t, loc, 2026, 11, 30, 14)
	day := func(d int) time.Time { return h.AddDate(0, 0, -d) }
	var recs []store.Hourly
	// free-a: eligible; three days ago the same hour was much worse.
	recs = append(recs, r("free-a", "free", h, 10.123, 50))
	for d := 1; d <= 7; d++ {
		q, tok := 20.0, 45.0
		if d == 3 {
			q, tok = 42.001, 30
		}
		recs = append(recs, r("free-a", "free", day(d), q, tok))
	}
	recs = append(recs,
		r("free-a", "free", day(8), 99, 1),                // before the lookback
		r("free-a", "free", day(1).Add(time.Hour), 80, 1), // another hour of day
		r("free-a", "free", h.Add(time.Hour), 77, 1),      // after the hour
	)
	// free-b: a failed probe in the hour.
	fb := r("free-b", "free", h, 5, 40)
	fb.Failures = 1
	recs = append(recs, fb, r("free-b", "free", day(1), 6, 40), r("free-b", "free", day(2), 4, 40))
	// mute: ok probes but no decode data.
	recs = append(recs, r("mute", "free", h, 3, 0))
	// stale: last sampled three hours ago.
	recs = append(recs, r("stale", "free", h.Add(-3*time.Hour), 8, 40), r("stale", "free", day(1), 12, 40))
	// ghost: never sampled (and a record with no samples does not count).
	recs = append(recs, store.Hourly{Lane: "ghost", Kind: "free", Hour: h})
	// paid: no record for the hour yet; the previous hour is the basis.
	recs = append(recs, r("paid", "paid", h.Add(-time.Hour), 1.4, 120), r("paid", "paid", day(1), 2, 150))
	// paid-slow: eligible, slow decode.
	recs = append(recs, r("paid-slow", "paid", h, 0.5, 20))
	p := Params{
		Location:     loc,
		LookbackDays: 7,
		Lanes: []LaneSpec{
			{Name: "free-a", Kind: "free"}, {Name: "free-b", Kind: "free"}, {Name: "mute", Kind: "free"}, {Name: "stale", Kind: "free"},
			{Name: "ghost", Kind: "free"}, {Name: "paid", Kind: "paid"}, {Name: "paid-slow", Kind: "paid"},
		},
		Classes: classes,
	}
	return p, recs, h.Add(12 * time.Minute) // any time in the hour
}

// kolkataScenario: UTC+05:30, so local hours start at :30 UTC.
func kolkataScenario(t testing.TB) (Params, []store.Hourly, time.Time) {
	loc := mustLoc(t, "Asia/Kolkata")
	h := at(t, loc, 2026, 6, 15, 9)
	recs := []store.Hourly{r("free", "free", h, 11, 40), r("paid", "paid", h, 1, 100)}
	for d := 1; d <= 3; d++ {
		recs = append(recs, r("free", "free", h.AddDate(0, 0, -d), 15, 40))
		// 09:00 UTC of a previous day is 14:30 local: not the same hour of day.
		utc9 := time.Date(2026, 6, 15-d, 9, 0, 0, 0, time.UTC)
		recs = append(recs, r("free", "free", utc9, 90, 1))
	}
	p := Params{Location: loc, LookbackDays: 7, Lanes: []LaneSpec{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}}, Classes: classes[:1]}
	return p, recs, h
}

// nySpringScenario: America/New_York; 2026-03-08 has no 02:00.
func nySpringScenario(t testing.TB) (Params, []store.Hourly) {
	loc := mustLoc(t, "America/New_York")
	var recs []store.Hourly
	for d := 1; d <= 9; d++ {
		hr := time.Date(2026, 3, d, 2, 0, 0, 0, loc)
		if hr.Hour() == 2 {
			recs = append(recs, r("free", "free", hr, float64(10+d), 40))
		}
		// The hour after: on 2026-03-08 it directly follows 01:00.
		recs = append(recs, r("free", "free", time.Date(2026, 3, d, 3, 0, 0, 0, loc), 70, 40))
	}
	recs = append(recs, r("paid", "paid", at(t, loc, 2026, 3, 8, 1), 1, 100))
	p := Params{Location: loc, LookbackDays: 7, Lanes: []LaneSpec{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}}, Classes: classes[:1]}
	return p, recs
}

// nyFallScenario: America/New_York; 2026-11-01 has 01:00 twice.
func nyFallScenario(t testing.TB) (Params, []store.Hourly) {
	loc := mustLoc(t, "America/New_York")
	first := time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC)  // 01:00 EDT
	second := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC) // 01:00 EST
	recs := []store.Hourly{
		r("free", "free", first, 10, 40),
		r("free", "free", second, 50, 40),
		r("free", "free", at(t, loc, 2026, 10, 31, 1), 20, 40),
		r("free", "free", at(t, loc, 2026, 11, 2, 1), 5, 40),
		r("paid", "paid", first, 1, 100),
	}
	p := Params{Location: loc, LookbackDays: 7, Lanes: []LaneSpec{{Name: "free", Kind: "free"}, {Name: "paid", Kind: "paid"}}, Classes: classes[:1]}
	return p, recs
}

func lane(t *testing.T, f File, name string) Lane {
	t.Helper()
	for _, l := range f.Lanes {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no lane %s", name)
	return Lane{}
}

func class(t *testing.T, f File, name string) Class {
	t.Helper()
	c, ok := f.Class(name)
	if !ok {
		t.Fatalf("no class %s", name)
	}
	return c
}

// golden compares Marshal(f) with testdata/golden/name.yaml (-update rewrites).
func golden(t *testing.T, name string, f File) []byte {
	t.Helper()
	got, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", name+".yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from Marshal output:\n%s", path, got)
	}
	return got
}

func TestForHourGolden(t *testing.T) {
	t.Run("utc_live", func(t *testing.T) {
		p, recs, h := utcScenario(t)
		f := forHour(p, recs, h)
		golden(t, "utc_live", f)
		if f.Hour != "2026-11-30T14" || f.Timezone != "UTC" || f.Basis != BasisLive {
			t.Fatalf("header: %+v", f)
		}
		for _, tc := range []struct {
			name     string
			eligible bool
			reason   string
			queue    float64
			tok      float64
			samples  int
			failures int
			last     string
		}{
			{"free-a", true, ReasonOK, 42.01, 30, 24, 0, "2026-11-30T14:47:03Z"}, // worst day wins, rounded up
			{"free-b", false, ReasonProbeFailed, 6, 40, 9, 1, "2026-11-30T14:47:03Z"},
			{"mute", true, ReasonOK, 3, 0, 3, 0, "2026-11-30T14:47:03Z"},
			{"stale", false, ReasonNoRecentSample, 12, 40, 3, 0, "2026-11-30T11:47:03Z"}, // lookback only
			{"ghost", false, ReasonNeverSampled, 0, 0, 0, 0, ""},
			{"paid", true, ReasonOK, 2, 120, 6, 0, "2026-11-30T13:47:03Z"}, // basis H-1
			{"paid-slow", true, ReasonOK, 0.5, 20, 3, 0, "2026-11-30T14:47:03Z"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				l := lane(t, f, tc.name)
				last := ""
				if !l.LastSample.IsZero() {
					last = l.LastSample.Format(time.RFC3339)
				}
				got := []any{l.Eligible, l.Reason, l.NextQueueS, l.TokPerS, l.Samples, l.Failures, last}
				want := []any{tc.eligible, tc.reason, tc.queue, tc.tok, tc.samples, tc.failures, tc.last}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("got %v, want %v", got, want)
				}
			})
		}
		t.Run("classes", func(t *testing.T) {
			in := class(t, f, "interactive")
			// free-a: 42.01 + 800/30 = 68.68 > 60; mute has no decode data.
			if !slices.Equal(in.Lanes, []string{"paid", "paid-slow"}) {
				t.Fatalf("interactive lanes %v", in.Lanes)
			}
			want := BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 42.01, NextGenS: 26.67, NextEstTokens: 800, PaidQueueS: 2, PaidUSDPer1k: 0.002, FreeEligible: true, PaidEligible: true, FreeLane: "free-a", PaidLane: "paid"}
			if in.Book != want {
				t.Fatalf("interactive book\n got %+v\nwant %+v", in.Book, want)
			}
			// Free lanes first, then by name.
			if b := class(t, f, "batch"); !slices.Equal(b.Lanes, []string{"free-a", "paid", "paid-slow"}) {
				t.Fatalf("batch lanes %v", b.Lanes)
			}
			if ti := class(t, f, "tight"); len(ti.Lanes) != 0 {
				t.Fatalf("tight lanes %v, want none", ti.Lanes)
			}
		})
	})
	t.Run("kolkata_live", func(t *testing.T) {
		p, recs, h := kolkataScenario(t)
		f := forHour(p, recs, h)
		golden(t, "kolkata_live", f)
		if f.Hour != "2026-06-15T09" || f.Timezone != "Asia/Kolkata" {
			t.Fatalf("header: %s %s", f.Hour, f.Timezone)
		}
		// The 09:00 UTC records (90 s) are 14:30 local: not in the lookback.
		if l := lane(t, f, "free"); l.NextQueueS != 15 || l.Samples != 12 {
			t.Fatalf("free: %+v", l)
		}
	})
	t.Run("ny_spring", func(t *testing.T) {
		p, recs := nySpringScenario(t)
		f := forHour(p, recs, at(t, p.Location, 2026, 3, 9, 2))
		golden(t, "ny_spring", f)
		// Basis 03-09 plus 03-02..03-07; 03-08 has no 02:00 and adds nothing
		// (its 03:00 record, 70 s, is another hour of day).
		l := lane(t, f, "free")
		if l.NextQueueS != 19 || l.Samples != 7*3 {
			t.Fatalf("free: %+v", l)
		}
	})
	t.Run("ny_spring_gap", func(t *testing.T) {
		p, recs := nySpringScenario(t)
		h := at(t, p.Location, 2026, 3, 8, 3) // first hour after the gap
		recs = slices.DeleteFunc(slices.Clone(recs), func(r store.Hourly) bool { return r.Hour.Equal(h) })
		f := forHour(p, recs, h)
		golden(t, "ny_spring_gap", f)
		// No record for 03:00; the previous hour is 01:00 EST (paid has one).
		if l := lane(t, f, "paid"); !l.Eligible || l.LastSample.Format(time.RFC3339) != "2026-03-08T06:47:03Z" {
			t.Fatalf("paid: %+v", l)
		}
		if l := lane(t, f, "free"); l.Eligible || l.Reason != ReasonNoRecentSample || l.NextQueueS != 70 {
			t.Fatalf("free: %+v", l)
		}
	})
	t.Run("ny_fall", func(t *testing.T) {
		p, recs := nyFallScenario(t)
		f := forHour(p, recs, at(t, p.Location, 2026, 11, 2, 1))
		golden(t, "ny_fall", f)
		// 11-01 had 01:00 twice: both count (the second one, 50 s, is worst).
		if l := lane(t, f, "free"); l.NextQueueS != 50 || l.Samples != 4*3 {
			t.Fatalf("free: %+v", l)
		}
	})
	t.Run("ny_fall_repeat", func(t *testing.T) {
		p, recs := nyFallScenario(t)
		second := time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC) // in 01:00 EST
		var keep []store.Hourly
		for _, r := range recs {
			if r.Lane == "paid" || !r.Hour.Equal(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)) {
				keep = append(keep, r)
			}
		}
		f := forHour(p, keep, second)
		golden(t, "ny_fall_repeat", f)
		// No record yet for the second 01:00: the first 01:00 (EDT) is H-1.
		if f.Hour != "2026-11-01T01" {
			t.Fatalf("hour %s", f.Hour)
		}
		if l := lane(t, f, "free"); !l.Eligible || l.NextQueueS != 20 || l.LastSample.Format(time.RFC3339) != "2026-11-01T05:47:03Z" {
			t.Fatalf("free: %+v", l)
		}
	})
}

func TestForecastGolden(t *testing.T) {
	t.Run("utc", func(t *testing.T) {
		p, recs, h := utcScenario(t)
		// The day after the scenario's records: 2026-11-30 is then history.
		files := forecast(p, recs, h.AddDate(0, 0, 1))
		if len(files) != 24 {
			t.Fatalf("%d files", len(files))
		}
		for i, f := range files {
			if f.Basis != BasisForecast || f.Hour != "2026-12-01T"+[]string{"00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20", "21", "22", "23"}[i] {
				t.Fatalf("file %d: %s %s", i, f.Hour, f.Basis)
			}
		}
		f := files[14]
		golden(t, "forecast_utc_14", f)
		// free-a at 14:00 over 11-24..11-30: 11-30 (10.123) and 11-27 (42.001).
		if l := lane(t, f, "free-a"); l.NextQueueS != 42.01 || l.Samples != 7*3 || !l.Eligible {
			t.Fatalf("free-a: %+v", l)
		}
		// free-b had a failure in the history at that hour.
		if l := lane(t, f, "free-b"); l.Eligible || l.Reason != ReasonProbeFailed {
			t.Fatalf("free-b: %+v", l)
		}
		// At 03:00 nobody has history: known lanes say no_recent_sample.
		if l := lane(t, files[3], "free-a"); l.Reason != ReasonNoRecentSample {
			t.Fatalf("free-a at 03: %+v", l)
		}
		if l := lane(t, files[3], "ghost"); l.Reason != ReasonNeverSampled {
			t.Fatalf("ghost at 03: %+v", l)
		}
	})
	t.Run("ny_spring_day", func(t *testing.T) {
		p, recs := nySpringScenario(t)
		files := forecast(p, recs, time.Date(2026, 3, 8, 12, 0, 0, 0, p.Location))
		if len(files) != 24 || files[2].Hour != "2026-03-08T02" {
			t.Fatalf("%d files, [2] = %s", len(files), files[2].Hour)
		}
		golden(t, "forecast_ny_spring_02", files[2])
		// 02:00 from 03-01..03-07 only; records of 03-08 and later are ignored.
		if l := lane(t, files[2], "free"); l.NextQueueS != 17 || l.Samples != 7*3 {
			t.Fatalf("free at 02: %+v", l)
		}
	})
}

func TestForHourIsStable(t *testing.T) {
	p, recs, h := utcScenario(t)
	want, err := Marshal(forHour(p, recs, h))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 20 {
		shuffled := slices.Clone(recs)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		// Records from after the hour change nothing.
		shuffled = append(shuffled, r("free-a", "free", h.Add(5*time.Hour), 500, 1), r("ghost", "free", h.AddDate(0, 0, 1), 1, 1))
		got, err := Marshal(forHour(p, shuffled, h))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("shuffle %d: output differs", i)
		}
	}
}

func TestForHourLaterRecordReplaces(t *testing.T) {
	p, _, h := utcScenario(t)
	hr := store.HourStart(h, time.UTC)
	early := r("free-a", "free", hr, 10, 40)
	later := r("free-a", "free", hr, 12, 40)
	later.Samples = 4
	f := forHour(p, []store.Hourly{early, later}, h)
	if l := lane(t, f, "free-a"); l.NextQueueS != 12 || l.Samples != 4 {
		t.Fatalf("free-a: %+v", l)
	}
}

func TestNoNonFiniteNumbers(t *testing.T) {
	h := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []store.Hourly{
		{Lane: "l-nan", Hour: h, WorstQueueS: math.NaN(), MinTokPerS: math.NaN(), Samples: 1},
		{Lane: "l-inf", Hour: h, WorstQueueS: math.Inf(1), MinTokPerS: math.Inf(1), Samples: 1},
		{Lane: "l-neg", Hour: h, WorstQueueS: -3, MinTokPerS: -1, Samples: 1},
		{Lane: "l-tiny", Hour: h, WorstQueueS: 1e-300, MinTokPerS: 1e-300, Samples: 1},
		{Lane: "l-huge", Hour: h, WorstQueueS: 1e308, MinTokPerS: 1e308, Samples: 1},
	}
	p := Params{LookbackDays: 7, Classes: classes}
	for _, rc := range recs {
		p.Lanes = append(p.Lanes, LaneSpec{Name: rc.Lane, Kind: KindFree})
	}
	p.Lanes = append(p.Lanes, LaneSpec{Name: "none", Kind: KindPaid})
	f := forHour(p, recs, h)
	data, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	num := regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	for _, line := range strings.Split(string(data), "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if ok && (strings.HasSuffix(key, "_s") || key == "tok_per_s" || key == "paid_usd_per_1k") && !num.MatchString(val) {
			t.Errorf("%s: %q is not a plain non-negative decimal", key, val)
		}
	}
	if l := lane(t, f, "l-huge"); l.NextQueueS != MaxSeconds {
		t.Errorf("a huge queue saturates at MaxSeconds, the most any reader accepts (and above any deadline): %v", l.NextQueueS)
	}
	if c := class(t, f, "batch"); slices.Contains(c.Lanes, "l-tiny") {
		t.Errorf("a lane that decodes at 1e-300 tok/s fits nothing: %v", c.Lanes)
	}
	if _, err := ParseFile(data); err != nil {
		t.Fatalf("output does not parse back: %v\n%s", err, data)
	}
}

func TestParseHour(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	for _, tc := range []struct {
		in      string
		loc     *time.Location
		want    string // UTC, RFC 3339
		wantErr string
	}{
		{"2026-11-30T14", time.UTC, "2026-11-30T14:00:00Z", ""},
		{"2026-11-30T14", nil, "2026-11-30T14:00:00Z", ""},
		{"2026-06-15T09", mustLoc(t, "Asia/Kolkata"), "2026-06-15T03:30:00Z", ""},
		{"2026-03-08T01", ny, "2026-03-08T06:00:00Z", ""},
		{"2026-03-08T02", ny, "", "does not exist in America/New_York"},
		{"2026-03-08T03", ny, "2026-03-08T07:00:00Z", ""},
		{"2026-11-01T01", ny, "2026-11-01T05:00:00Z", ""}, // first of the two
		{"2026-11-01T02", ny, "2026-11-01T07:00:00Z", ""},
		{"2026-11-30", time.UTC, "", "want YYYY-MM-DDTHH"},
		{"2026-11-30T24", time.UTC, "", "want YYYY-MM-DDTHH"},
		{"2026-11-30T14:00", time.UTC, "", "want YYYY-MM-DDTHH"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := store.ParseHour(tc.in, tc.loc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.UTC().Format(time.RFC3339) != tc.want {
				t.Fatalf("got %v, %v; want %s", got.UTC(), err, tc.want)
			}
			if store.HourLabel(got, tc.loc) != tc.in {
				t.Fatalf("label %s", store.HourLabel(got, tc.loc))
			}
		})
	}
}

func TestHourStart(t *testing.T) {
	kol := mustLoc(t, "Asia/Kolkata")
	got := store.HourStart(time.Date(2026, 6, 15, 4, 10, 5, 7, time.UTC), kol)
	if !got.Equal(time.Date(2026, 6, 15, 3, 30, 0, 0, time.UTC)) {
		t.Fatalf("got %v", got.UTC())
	}
	ny := mustLoc(t, "America/New_York")
	second := time.Date(2026, 11, 1, 6, 59, 0, 0, time.UTC) // 01:59 EST
	if got := store.HourStart(second, ny); !got.Equal(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)) {
		t.Fatalf("got %v", got.UTC())
	}
}

func TestHourStartHalfHourDST(t *testing.T) {
	// Lord Howe Island moves its clocks by 30 minutes: on 2026-04-05 02:00
	// LHDT (+11) becomes 01:30 LHST (+10:30).
	lh := mustLoc(t, "Australia/Lord_Howe")
	for _, at := range []time.Time{
		time.Date(2026, 4, 4, 14, 50, 0, 0, time.UTC), // 01:50 +11
		time.Date(2026, 4, 4, 15, 10, 0, 0, time.UTC), // 01:40 +10:30
		time.Date(2026, 4, 4, 15, 40, 0, 0, time.UTC), // 02:10 +10:30
	} {
		got := store.HourStart(at, lh)
		if lt := at.In(lh); got.Hour() != lt.Hour() || got.Minute() != 0 || got.After(at) {
			t.Errorf("store.HourStart(%v) = %v", lt, got)
		}
	}
}

// next_gen_s comes from the rate a reader sees in the file (rounded down),
// so est_tokens / tok_per_s of the file never exceeds it.
func TestNextGenUsesTheFilesRate(t *testing.T) {
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	recs := []store.Hourly{
		{Lane: "free", Kind: KindFree, Hour: h, WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 41.4999, Samples: 3},
		{Lane: "paid", Kind: KindPaid, Hour: h, WorstQueueS: 1, WorstGenS: 1, MinTokPerS: 41.4999, Samples: 3},
	}
	p := Params{Lanes: []LaneSpec{{Name: "free", Kind: KindFree}, {Name: "paid", Kind: KindPaid}},
		Classes: []ClassSpec{{Name: "big", DeadlineS: 600, CeilingTokens: 8000, EstTokens: 4000}}}
	f := forHour(p, recs, h)
	rate := f.Lanes[0].TokPerS
	b := f.Classes[0].Book
	if rate != 41.49 || b.NextGenS < 4000/rate || b.NextGenS != ceil2(4000/rate) {
		t.Fatalf("tok_per_s %v, next_gen_s %v; want 41.49 and ceil(4000/41.49) = %v", rate, b.NextGenS, ceil2(4000/rate))
	}
}

// TestHistoryLaneAtEqualsForHour checks History.LaneAt, with its memo of
// lookback figures, against ForHour built from scratch, over random
// sequences: records added out of order (older hours after newer ones),
// replaced, several sites, bases up to two days wide, a DST change, and
// several lookbacks asked in turn, records dropped.
func TestHistoryLaneAtEqualsForHour(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 17))
		lanes := []LaneSpec{
			{Name: "a", Kind: "free"},
			{Name: "b", Kind: "free", BasisHours: 3},
			{Name: "c", Kind: "paid", BasisHours: 30},
			{Name: "d", Kind: "free", BasisHours: 48},
		}
		x := NewHistory(ny)
		var recs []store.Hourly
		now := time.Date(2026, 3, 1, 0, 0, 0, 0, ny) // DST starts on 2026-03-08
		check := func(step int, spec LaneSpec, days int) {
			t.Helper()
			p := Params{Location: ny, LookbackDays: days, Lanes: lanes}
			want := lane(t, ForHour(p, recs, nil, now), spec.Name)
			if got := x.LaneAt(p, spec, LaneState{Lane: spec.Name}, now); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d: lane %s at %s, lookback %d:\n got %+v\nwant %+v",
					seed, step, spec.Name, now, days, got, want)
			}
		}
		lookbacks := []int{0, 1, 3, 7}
		for step := range 1500 {
			if rng.IntN(4) == 0 {
				now = store.HourStart(now.Add(time.Duration(rng.IntN(5))*time.Hour), ny)
			}
			if rng.IntN(100) == 0 { // a replay drops what it no longer reads
				for _, spec := range lanes {
					for _, days := range lookbacks {
						check(step, spec, days) // memos of the hour, then the drop
					}
				}
				cut := store.HourStart(now.Add(-time.Duration(rng.IntN(24*10))*time.Hour), ny)
				x.Drop(cut)
				recs = slices.DeleteFunc(recs, func(r store.Hourly) bool { return r.Hour.Before(cut) })
				for _, spec := range lanes {
					for _, days := range lookbacks {
						check(step, spec, days)
					}
				}
				continue
			}
			if rng.IntN(3) > 0 {
				back := 0 // mostly the hour itself, as a replay adds
				if rng.IntN(3) == 0 {
					back = rng.IntN(24 * 9)
				}
				rc := store.Hourly{
					Lane: lanes[rng.IntN(len(lanes))].Name, Site: []string{"", "s2"}[rng.IntN(2)],
					Hour:        store.HourStart(now.Add(-time.Duration(back)*time.Hour), ny),
					WorstQueueS: float64(rng.IntN(4000)) / 100, WorstGenS: 1, MinTokPerS: float64(rng.IntN(80)),
					Samples: rng.Int64N(4), WorstCensoredS: float64(rng.IntN(2) * rng.IntN(60)),
				}
				if rc.Samples > 0 {
					rc.Failures = rng.Int64N(rc.Samples + 1)
				}
				rc.Kind = map[string]string{"a": "free", "b": "free", "c": "paid", "d": "free"}[rc.Lane]
				x.Add(rc)
				recs = append(recs, rc)
				continue
			}
			check(step, lanes[rng.IntN(len(lanes))], lookbacks[rng.IntN(len(lookbacks))])
		}
	}
}

// TestReadHoursIsWhatAPolicyReads: the live policy built from the records
// of Params.ReadHours alone equals the one built from every record, across
// a DST change in each direction, sparse lanes and several lookbacks; and
// neither list names an hour twice.
func TestReadHoursIsWhatAPolicyReads(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	lanes := []LaneSpec{{Name: "a", Kind: "free"}, {Name: "b", Kind: "paid", BasisHours: 3}, {Name: "c", Kind: "free", BasisHours: 30}}
	rng := rand.New(rand.NewPCG(11, 12))
	var recs []store.Hourly
	start := time.Date(2026, 2, 25, 0, 0, 0, 0, ny)
	for h := start; h.Before(time.Date(2026, 11, 10, 0, 0, 0, 0, ny)); h = h.Add(time.Hour) {
		if rng.IntN(3) == 0 {
			continue
		}
		l := lanes[rng.IntN(len(lanes))]
		recs = append(recs, store.Hourly{Lane: l.Name, Kind: l.Kind, Hour: h, WorstQueueS: float64(rng.IntN(5000)) / 100,
			MinTokPerS: float64(1 + rng.IntN(60)), Samples: 1 + rng.Int64N(3), Failures: rng.Int64N(2)})
	}
	hoursToCheck := []time.Time{
		time.Date(2026, 3, 9, 2, 0, 0, 0, ny), time.Date(2026, 3, 15, 2, 30, 0, 0, ny), // after spring forward
		time.Date(2026, 11, 2, 1, 0, 0, 0, ny), time.Date(2026, 11, 2, 1, 0, 0, 0, ny).Add(time.Hour), // the repeated hour
		time.Date(2026, 11, 8, 1, 10, 0, 0, ny), time.Date(2026, 6, 1, 17, 0, 0, 0, ny),
	}
	for _, days := range []int{0, 1, 3, 7} {
		p := Params{Location: ny, LookbackDays: days, Lanes: lanes}
		for _, h := range hoursToCheck {
			basis, lookback := p.ReadHours(h)
			read := map[int64]bool{}
			for _, hs := range [][]time.Time{basis, lookback} { // a wide basis may reach a lookback day
				seen := map[int64]bool{}
				for _, c := range hs {
					if seen[c.Unix()] {
						t.Fatalf("lookback %d, %s: hour %s listed twice", days, h, c)
					}
					seen[c.Unix()], read[c.Unix()] = true, true
				}
			}
			var some []store.Hourly
			for _, r := range recs {
				if read[r.Hour.Unix()] {
					some = append(some, r)
				}
			}
			want, got := ForHour(p, recs, nil, h), ForHour(p, some, nil, h)
			for i := range want.Lanes {
				want.Lanes[i].LastSample, got.Lanes[i].LastSample = time.Time{}, time.Time{}
			}
			want.Records, got.Records = 0, 0
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("lookback %d, %s: from the hours read\n %+v\nfrom all\n %+v", days, h, got, want)
			}
			if samples := want.Lanes[0].Samples + want.Lanes[1].Samples + want.Lanes[2].Samples; samples == 0 {
				t.Fatalf("lookback %d, %s: no samples at all; the test reads nothing", days, h)
			}
		}
	}
	// The basis reaches exactly as far as the sparsest lane's: a lone record
	// 30 hours back is lane c's basis, and read.
	h := time.Date(2026, 6, 1, 17, 0, 0, 0, ny)
	p := Params{Location: ny, Lanes: lanes}
	lone := []store.Hourly{{Lane: "c", Kind: "free", Hour: h.Add(-30 * time.Hour), WorstQueueS: 4, MinTokPerS: 9, Samples: 1}}
	basis, _ := p.ReadHours(h.Add(10 * time.Minute))
	if l := lane(t, ForHour(p, lone, nil, h), "c"); !l.Eligible || !basis[0].Equal(lone[0].Hour) || !basis[len(basis)-1].Equal(h) {
		t.Errorf("basis hours %s..%s, lane c %+v; want 30 hours back to the hour itself, c eligible", basis[0], basis[len(basis)-1], l)
	}
}

// mtHour is the policy hour of the tests below that need no timezone.
var mtHour = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

// mtRec is a record of three probes at site, queue seconds, tok tok/s.
func mtRec(lane, kind, site string, hour time.Time, queue, tok float64, failures int) store.Hourly {
	return store.Hourly{Lane: lane, Kind: kind, Site: site, Hour: hour, WorstQueueS: queue, WorstGenS: 1,
		MinTokPerS: tok, Samples: 3, Failures: int64(failures)}
}

func mtLane(t *testing.T, f File, name string) Lane {
	t.Helper()
	i := slices.IndexFunc(f.Lanes, func(l Lane) bool { return l.Name == name })
	if i < 0 {
		t.Fatalf("no lane %s in %+v", name, f.Lanes)
	}
	return f.Lanes[i]
}

// The basis is one record per site: the newest one of that site. An older
// hour of the same site is not a second basis record (issue 22 #4:
// `b.Site == r.Site` → `!=` made H-1's failure decide hour H), while
// another site's older hour is that site's basis.
func TestBasisIsTheNewestRecordPerSite(t *testing.T) {
	h := mtHour
	for _, tc := range []struct {
		name     string
		recs     []store.Hourly
		spec     LaneSpec
		days     int
		reason   string
		queue    float64
		samples  int
		failures int
		records  int
		sites    []string
	}{
		{
			name: "H-1 failed, H fine: H alone is the basis",
			recs: []store.Hourly{mtRec("a", KindFree, "", h, 3, 40, 0), mtRec("a", KindFree, "", h.Add(-time.Hour), 9, 40, 1)},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonOK, queue: 3, samples: 3, records: 1,
		},
		{
			name: "H fine at s1, H-1 failed at s2: both sites are the basis",
			recs: []store.Hourly{mtRec("a", KindFree, "s1", h, 3, 40, 0), mtRec("a", KindFree, "s2", h.Add(-time.Hour), 9, 40, 1)},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonProbeFailed, queue: 9, samples: 6, failures: 1, records: 2,
			sites: []string{"s1", "s2"},
		},
		{
			name: "H-1 at two sites, H at one: H-1 is the other site's basis only",
			recs: []store.Hourly{
				mtRec("a", KindFree, "s1", h, 3, 40, 0),
				mtRec("a", KindFree, "s1", h.Add(-time.Hour), 20, 40, 1),
				mtRec("a", KindFree, "s2", h.Add(-time.Hour), 7, 40, 0),
			},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonOK, queue: 7, samples: 6, records: 2,
			sites: []string{"s1", "s2"},
		},
		{
			// BasisHours 30 reaches H-24, which the lookback reads too:
			// the record counts once (samples 3 + 3, not 9).
			name: "a basis record that is also a lookback record counts once",
			recs: []store.Hourly{mtRec("a", KindFree, "", h.Add(-24*time.Hour), 4, 40, 0), mtRec("a", KindFree, "", h.Add(-48*time.Hour), 6, 40, 0)},
			spec: LaneSpec{Name: "a", Kind: KindFree, BasisHours: 30}, days: 2, reason: ReasonOK, queue: 6, samples: 6, records: 2,
		},
		{
			name: "a record with no samples is no basis: H-1 is",
			recs: []store.Hourly{{Lane: "a", Kind: KindFree, Hour: h, WorstQueueS: 50}, mtRec("a", KindFree, "", h.Add(-time.Hour), 2, 40, 0)},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonOK, queue: 2, samples: 3, records: 1,
		},
		{
			name: "H-2 is outside the default basis",
			recs: []store.Hourly{mtRec("a", KindFree, "", h.Add(-2*time.Hour), 2, 40, 0)},
			spec: LaneSpec{Name: "a", Kind: KindFree}, reason: ReasonNoRecentSample, queue: 0, samples: 0, records: 0,
		},
		{
			name: "H-2 is inside a basis of 2 hours",
			recs: []store.Hourly{mtRec("a", KindFree, "", h.Add(-2*time.Hour), 2, 40, 0)},
			spec: LaneSpec{Name: "a", Kind: KindFree, BasisHours: 2}, reason: ReasonOK, queue: 2, samples: 3, records: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Params{LookbackDays: tc.days, Lanes: []LaneSpec{tc.spec}}
			f := ForHour(p, tc.recs, nil, h.Add(5*time.Minute))
			l := mtLane(t, f, "a")
			got := []any{l.Reason, l.Eligible, l.NextQueueS, l.Samples, l.Failures, f.Records, f.Sites}
			want := []any{tc.reason, tc.reason == ReasonOK, tc.queue, tc.samples, tc.failures, tc.records, tc.sites}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("reason, eligible, queue, samples, failures, records, sites:\n got %v\nwant %v", got, want)
			}
			// History.LaneAt (the replay's path, with its lookback memo) agrees.
			x := NewHistory(nil)
			for _, r := range tc.recs {
				x.Add(r)
			}
			for range 2 { // the second call reads the memo
				if got := x.LaneAt(p, tc.spec, LaneState{Lane: "a"}, h); !reflect.DeepEqual(got, l) {
					t.Fatalf("LaneAt\n got %+v\nwant %+v", got, l)
				}
			}
		})
	}
}

// A lane whose quota is spent past the start of the hour is
// quota_exhausted, with Until in whole UTC seconds; at or before the start
// it is not (issue 22 #5: the case, and its After boundary, were only
// guarded by an integration test elsewhere).
func TestLiveQuotaExhausted(t *testing.T) {
	h := mtHour
	kolkata := mustLoc(t, "Asia/Kolkata")
	ok := mtRec("a", KindFree, "", h, 3, 40, 0)
	failed := mtRec("a", KindFree, "", h, 3, 40, 1)
	old := mtRec("a", KindFree, "", h.Add(-24*time.Hour), 5, 40, 0)
	for _, tc := range []struct {
		name   string
		recs   []store.Hourly
		state  LaneState
		reason string
		until  time.Time
		queue  float64
	}{
		{"no quota state", []store.Hourly{ok}, LaneState{}, ReasonOK, time.Time{}, 3},
		{"spent for 30 more minutes", []store.Hourly{ok}, LaneState{QuotaUntil: h.Add(30*time.Minute + 700*time.Millisecond).In(kolkata)},
			ReasonQuotaExhausted, h.Add(30 * time.Minute), 3},
		{"back a nanosecond after the hour starts", []store.Hourly{ok}, LaneState{QuotaUntil: h.Add(time.Nanosecond)}, ReasonQuotaExhausted, h, 3},
		{"back exactly at the hour's start", []store.Hourly{ok}, LaneState{QuotaUntil: h}, ReasonOK, time.Time{}, 3},
		{"back before the hour", []store.Hourly{ok}, LaneState{QuotaUntil: h.Add(-time.Nanosecond)}, ReasonOK, time.Time{}, 3},
		{"quota outranks a failed basis", []store.Hourly{failed}, LaneState{QuotaUntil: h.Add(time.Hour)}, ReasonQuotaExhausted, h.Add(time.Hour), 3},
		{"quota outranks no basis", []store.Hourly{old}, LaneState{QuotaUntil: h.Add(time.Hour)}, ReasonQuotaExhausted, h.Add(time.Hour), 5},
		{"never sampled outranks quota", nil, LaneState{QuotaUntil: h.Add(time.Hour)}, ReasonNeverSampled, time.Time{}, 0},
		{"a probe known but no record: quota", nil, LaneState{LastSample: h.Add(-time.Minute), QuotaUntil: h.Add(time.Hour)},
			ReasonQuotaExhausted, h.Add(time.Hour), 0},
		{"a probe known but no record, no quota", nil, LaneState{LastSample: h.Add(-time.Minute)}, ReasonNoRecentSample, time.Time{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.state.Lane = "a"
			p := Params{LookbackDays: 1, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}},
				Classes: []ClassSpec{{Name: "c", DeadlineS: 600, CeilingTokens: 4000, EstTokens: 400}}}
			f := ForHour(p, tc.recs, []LaneState{{Lane: "other", QuotaUntil: h.Add(time.Hour)}, tc.state}, h)
			l := mtLane(t, f, "a")
			if l.Reason != tc.reason || l.Eligible != (tc.reason == ReasonOK) || !l.Until.Equal(tc.until) || l.NextQueueS != tc.queue {
				t.Fatalf("got %s eligible %v until %v queue %v; want %s until %v queue %v",
					l.Reason, l.Eligible, l.Until, l.NextQueueS, tc.reason, tc.until, tc.queue)
			}
			if !tc.until.IsZero() && l.Until.Location() != time.UTC {
				t.Errorf("until in %s, want UTC", l.Until.Location())
			}
			c := f.Classes[0]
			if listed := len(c.Lanes) == 1; listed != l.Eligible || c.Book.FreeEligible != l.Eligible {
				t.Errorf("class lanes %v, free_eligible %v; lane eligible %v", c.Lanes, c.Book.FreeEligible, l.Eligible)
			}
		})
	}
}

// A file names the sites its figures come from, sorted, unless every one
// of them is the untagged site (issue 22 #6: `sites` was never checked).
// Records the figures do not read (another hour of day, an older basis
// hour of the same site) add no site.
func TestFileSites(t *testing.T) {
	h := mtHour
	for _, tc := range []struct {
		name string
		recs []store.Hourly
		live []string
		fc   []string // the forecast of the next day, hour 14
	}{
		{"none", nil, nil, nil},
		{"untagged only", []store.Hourly{mtRec("a", KindFree, "", h, 1, 40, 0)}, nil, nil},
		{"one site", []store.Hourly{mtRec("a", KindFree, "s1", h, 1, 40, 0)}, []string{"s1"}, []string{"s1"}},
		{"untagged and a site", []store.Hourly{mtRec("a", KindFree, "zz", h, 1, 40, 0), mtRec("b", KindPaid, "", h, 1, 40, 0)},
			[]string{"", "zz"}, []string{"", "zz"}},
		{"sorted, from the lookback too", []store.Hourly{
			mtRec("a", KindFree, "s3", h, 1, 40, 0),
			mtRec("a", KindFree, "s1", h.Add(-24*time.Hour), 1, 40, 0),
			mtRec("b", KindPaid, "s2", h.Add(-time.Hour), 1, 40, 0),
		}, []string{"s1", "s2", "s3"}, []string{"s3"}},
		{"records not read add no site", []store.Hourly{
			mtRec("a", KindFree, "s1", h, 1, 40, 0),
			mtRec("a", KindFree, "s1", h.Add(-time.Hour), 1, 40, 0),
			mtRec("a", KindFree, "old", h.Add(-3*time.Hour), 1, 40, 0),
			mtRec("b", KindPaid, "other-hour", h.Add(-25*time.Hour), 1, 40, 0),
			mtRec("b", KindPaid, "b-site", h, 1, 40, 0),
			{Lane: "b", Kind: KindPaid, Site: "no-samples", Hour: h, WorstQueueS: 1},
			mtRec("ghost", KindPaid, "unconfigured", h, 1, 40, 0),
		}, []string{"b-site", "s1"}, []string{"b-site", "s1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Params{LookbackDays: 1, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}, {Name: "b", Kind: KindPaid}}}
			if got := ForHour(p, tc.recs, nil, h).Sites; !slices.Equal(got, tc.live) || (got == nil) != (tc.live == nil) {
				t.Errorf("live sites %q, want %q", got, tc.live)
			}
			if got := ForecastProbes(p, tc.recs, nil, nil, h.Add(24*time.Hour))[14].Sites; !slices.Equal(got, tc.fc) || (got == nil) != (tc.fc == nil) {
				t.Errorf("forecast sites %q, want %q", got, tc.fc)
			}
		})
	}
	// An empty site list is not written; a site list is, as a flow sequence.
	f := ForHour(Params{Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}}, []store.Hourly{mtRec("a", KindFree, "s1", h, 1, 40, 0)}, nil, h)
	data, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\nsites: [s1]\n") {
		t.Errorf("no sites line in\n%s", data)
	}
	f.Sites = nil
	if data, _ := Marshal(f); strings.Contains(string(data), "sites") {
		t.Errorf("sites written for an untagged file:\n%s", data)
	}
}

// A lane's fail share is its failure chain's chance when it has one, else
// its failures over its samples, at most 1 and never below 0; a lane
// without samples has none (0, not NaN and not 1).
func TestFailShareIsFailuresOverSamples(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Lane
		want float64
	}{
		{"no samples", Lane{}, 0},
		{"failures without samples", Lane{Failures: 2}, 0},
		{"1 of 4", Lane{Samples: 4, Failures: 1}, 0.25},
		{"more failures than samples", Lane{Samples: 2, Failures: 3}, 1},
		{"negative failures", Lane{Samples: 2, Failures: -1}, 0},
		{"the chain's", Lane{Samples: 4, Failures: 1, chained: true, failP: 0.6}, 0.6},
	} {
		if got := tc.l.FailShare(); got != tc.want {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
}

// NamedClass names the classes a file has, or says it has none.
func TestNamedClassErrors(t *testing.T) {
	f := File{Hour: "2026-11-30T14", Classes: []Class{{Name: "interactive"}, {Name: "batch"}}}
	if c, err := f.NamedClass("batch"); err != nil || c.Name != "batch" {
		t.Errorf("batch: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		f    File
		want string
	}{
		{f, `class "bulk": not in the policy file for 2026-11-30T14 (classes: interactive, batch)`},
		{File{Hour: "2026-11-30T15"}, `class "bulk": not in the policy file for 2026-11-30T15 (it has no classes)`},
	} {
		if _, err := tc.f.NamedClass("bulk"); err == nil || err.Error() != tc.want {
			t.Errorf("err %v, want %q", err, tc.want)
		}
		if _, err := tc.f.Book("bulk"); err == nil || err.Error() != tc.want {
			t.Errorf("Book: err %v, want %q", err, tc.want)
		}
	}
}

// short429Params is one free lane on a budget of 12 probes a day: one probe
// every 2 hours, so its basis may be 3 hours old (budget.BasisHours).
func short429Params() Params {
	return Params{Location: time.UTC, LookbackDays: 1, Lanes: []LaneSpec{{Name: "free", Kind: KindFree, BasisHours: 3}}}
}

// liveAt is the pipeline's live answer for the lane at instant now: the
// probes known by then rolled up into hours (store.Rollup, as the sampler
// stores them), the lane's state from its newest probe (States), the file
// of the hour holding now as of now (load.ForHour, the status page).
func liveAt(p Params, probes []store.Probe, now time.Time) Lane {
	var known []store.Probe
	var newest []store.Probe
	for _, pr := range probes {
		if !pr.Time.After(now) {
			known = append(known, pr)
			newest = []store.Probe{pr}
		}
	}
	f := ForHour(p, store.Rollup(known, time.UTC), States(newest, time.UTC), now)
	return f.Lanes[0]
}

func limited429(at time.Time, waitS float64) store.Probe {
	return store.Probe{Lane: "free", Kind: KindFree, Time: at, Outcome: string(probe.RateLimited), Status: 429, QuotaResetS: waitS}
}

func okProbe(at time.Time, queueS float64) store.Probe {
	return store.Probe{Lane: "free", Kind: KindFree, Time: at, OK: true, Outcome: string(probe.OK), Status: 200, QueueS: queueS, GenS: 0.4, Tokens: 16}
}

// The case, worked by hand: a lane on 12 probes a day is ok at
// 05:17; at 07:17 it answers 429 with Retry-After: 7. The back-off ends at
// 07:17:07, and with it the lane's quota_exhausted: at 07:24 and at 07:28
// (when the status page showed "until 07:24" beside eligible "no") it is
// eligible on its other evidence, and in the next hour it is not
// probe_failed (its basis, hour 07, holds a busy 429, no failure). Before
// issue 18 it stayed quota_exhausted for the rest of hour 07 and was
// probe_failed in hour 08.
//
// Beside it, the 429s that do say the quota is spent: a wait past
// store.BusyMaxS (Retry-After 7 but the request window resets in 7
// minutes), two 429s in one hour, and a wait to midnight.
func TestShort429HandWorked(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(h, m, s int) time.Time {
		return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	}
	midnight := day.Add(24 * time.Hour)
	type want struct {
		now    time.Time
		reason string
		until  time.Time
	}
	cases := []struct {
		name   string
		probes []store.Probe
		wants  []want
	}{
		{"Retry-After 7 at 07:17", []store.Probe{okProbe(at(5, 17, 0), 2), limited429(at(7, 17, 0), 7), okProbe(at(9, 17, 0), 3)},
			[]want{
				{at(7, 16, 0), ReasonOK, time.Time{}},
				{at(7, 17, 3), ReasonQuotaExhausted, at(7, 17, 7)},
				{at(7, 17, 7), ReasonOK, time.Time{}},
				{at(7, 24, 0), ReasonOK, time.Time{}},
				{at(7, 28, 0), ReasonOK, time.Time{}},
				{at(8, 0, 0), ReasonOK, time.Time{}},
				{at(8, 30, 0), ReasonOK, time.Time{}},
				{at(9, 30, 0), ReasonOK, time.Time{}},
			}},
		{"Retry-After 7, the request window resets in 7 minutes (until 07:24)", []store.Probe{okProbe(at(5, 17, 0), 2), limited429(at(7, 17, 0), 420), okProbe(at(9, 17, 0), 3)},
			[]want{
				{at(7, 20, 0), ReasonQuotaExhausted, at(7, 24, 0)},
				// Past until the page never shows it: the lane is judged on
				// its records, and a wait past BusyMaxS is a failure.
				{at(7, 28, 0), ReasonProbeFailed, time.Time{}},
				{at(8, 30, 0), ReasonProbeFailed, time.Time{}},
				{at(9, 30, 0), ReasonOK, time.Time{}},
			}},
		{"two 429s in one hour: the quota is spent", []store.Probe{okProbe(at(5, 17, 0), 2), limited429(at(7, 7, 0), 7), limited429(at(7, 27, 0), 7)},
			[]want{
				{at(7, 20, 0), ReasonOK, time.Time{}}, // one busy 429 so far
				{at(7, 27, 5), ReasonQuotaExhausted, at(7, 27, 7)},
				{at(7, 28, 0), ReasonProbeFailed, time.Time{}},
				{at(8, 30, 0), ReasonProbeFailed, time.Time{}},
			}},
		{"a wait to midnight", []store.Probe{okProbe(at(5, 17, 0), 2), limited429(at(7, 17, 0), midnight.Sub(at(7, 17, 0)).Seconds())},
			[]want{
				{at(7, 28, 0), ReasonQuotaExhausted, midnight},
				{at(15, 0, 0), ReasonQuotaExhausted, midnight},
				{at(23, 59, 59), ReasonQuotaExhausted, midnight},
				{midnight.Add(time.Second), ReasonNoRecentSample, time.Time{}},
			}},
	}
	p := short429Params()
	for _, c := range cases {
		for _, w := range c.wants {
			t.Run(fmt.Sprintf("%s/%s", c.name, w.now.Format("15:04:05")), func(t *testing.T) {
				l := liveAt(p, c.probes, w.now)
				if l.Reason != w.reason || !l.Until.Equal(w.until) || l.Eligible != (w.reason == ReasonOK) {
					t.Errorf("at %s: reason %s until %s eligible %v, want %s until %s",
						w.now.Format(time.TimeOnly), l.Reason, l.Until.Format(time.TimeOnly), l.Eligible, w.reason, w.until.Format(time.TimeOnly))
				}
			})
		}
	}
}

// TestShort429Evidence drives random probe sequences of one budgeted lane
// (ok probes, timeouts, 429s with no wait, busy waits and long ones up to
// budget.MaxBackoff) and asks for the live answer at random instants. The
// rule's invariants hold at every instant:
//
//   - a back-off lasts what the server said: budget.Backoff of a 429 with
//     a wait is the probe's time plus the wait (at most MaxBackoff);
//   - ineligibility never outlasts the evidence: quota_exhausted only
//     while the newest probe's back-off runs (until > now), and
//     probe_failed only when the basis record holds a failure other than a
//     lone busy 429 (an oracle that reads the probes);
//   - a real exhaustion keeps the lane out for as long as it lasts: while
//     the newest probe's back-off runs the lane is quota_exhausted (or
//     never eligible), and an hour with two 429s fails its basis.
func TestShort429Evidence(t *testing.T) {
	p := short429Params()
	basisHours := p.Lanes[0].BasisHours
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 18))
		start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(24)) * time.Hour)
		var probes []store.Probe
		at := start
		for range 2 + rng.IntN(12) {
			at = at.Add(time.Duration(1+rng.IntN(150)) * time.Minute)
			var pr store.Probe
			switch k := rng.IntN(6); k {
			case 0, 1:
				pr = okProbe(at, float64(rng.IntN(30)))
			case 2:
				pr = store.Probe{Lane: "free", Kind: KindFree, Time: at, Outcome: string(probe.Timeout), QueueS: 120}
			case 3:
				pr = limited429(at, float64(1+rng.IntN(int(store.BusyMaxS))))
			case 4:
				pr = limited429(at, store.BusyMaxS+float64(rng.IntN(int(budget.MaxBackoff.Seconds()))))
			default:
				pr = limited429(at, 0)
			}
			probes = append(probes, pr)
		}
		for _, pr := range probes {
			if u, ok := budget.Backoff(pr, time.UTC); ok && pr.QuotaResetS > 0 {
				if want := pr.Time.Add(time.Duration(min(pr.QuotaResetS, budget.MaxBackoff.Seconds()) * float64(time.Second))); !u.Equal(want) {
					t.Fatalf("seed %d: back-off of %+v until %s, want %s (what the server said)", seed, pr, u, want)
				}
			}
		}
		for range 40 {
			now := start.Add(time.Duration(rng.Int64N(int64(at.Sub(start) + 30*time.Hour))))
			l := liveAt(p, probes, now)
			var newest *store.Probe
			for i := range probes {
				if !probes[i].Time.After(now) {
					newest = &probes[i]
				}
			}
			var backoff time.Time
			if newest != nil {
				backoff, _ = budget.Backoff(*newest, time.UTC)
			}
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d at %s: %s; lane %+v; probes %+v", seed, now.Format(time.DateTime), fmt.Sprintf(format, args...), l, probes)
			}
			running := backoff.After(now)
			switch {
			case l.Reason == ReasonQuotaExhausted && !running:
				fail("quota_exhausted after the back-off (%s) ended", backoff.Format(time.DateTime))
			case l.Reason == ReasonQuotaExhausted && !l.Until.Equal(backoff.UTC().Truncate(time.Second)):
				fail("until %s, want the back-off's %s", l.Until, backoff)
			case running && l.Eligible:
				fail("eligible while the back-off (%s) runs", backoff.Format(time.DateTime))
			case running && l.Reason != ReasonQuotaExhausted:
				fail("%s while the back-off runs, want quota_exhausted", l.Reason)
			}
			if running {
				continue
			}
			// The oracle: the basis is the newest hour of the last
			// basisHours+1 with a probe; it fails on a probe that is not
			// ok and not the hour's only 429 with a busy wait.
			h := now.Truncate(time.Hour)
			basis, real := false, false
			for back := 0; back <= basisHours && !basis; back++ {
				from := h.Add(-time.Duration(back) * time.Hour)
				var in []store.Probe
				for _, pr := range probes {
					if !pr.Time.Before(from) && pr.Time.Before(from.Add(time.Hour)) && !pr.Time.After(now) {
						in = append(in, pr)
					}
				}
				basis = len(in) > 0
				limited := 0
				for _, pr := range in {
					if pr.Outcome == string(probe.RateLimited) {
						limited++
					}
				}
				for _, pr := range in {
					if !pr.OK && !(limited == 1 && store.Busy(pr)) {
						real = true
					}
				}
			}
			switch {
			case l.Reason == ReasonProbeFailed && !real:
				fail("probe_failed on a basis with no failure but a busy 429")
			case basis && real && l.Reason != ReasonProbeFailed:
				fail("%s on a basis with a failure, want probe_failed", l.Reason)
			case basis && !real && l.Reason != ReasonOK:
				fail("%s on a sound basis, want ok", l.Reason)
			}
		}
	}
}
