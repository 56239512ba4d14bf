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
	return Forecast(p, recs, statesBefore(recs, store.DayStart(day, p.Location)), day)
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
