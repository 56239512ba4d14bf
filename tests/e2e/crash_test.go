package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

// envInt reads a positive int from the environment, else def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}

// storedRound is a round the daemon logged as stored: its probes all
// started after `after` (the previous logged round of the same process, or
// the process start) and were durable at `at`.
type storedRound struct {
	life      int
	after, at time.Time
}

// TestSamplerKill9 kills the sampler daemon with SIGKILL at random points
// over many rounds (LANEWATCH_CRASH_KILLS lives, default 6). After every kill
// the store opens read-only and holds, for every round the daemon logged as
// stored, exactly one probe of every lane in that round's window; the next
// writer repairs whatever a kill left and its reads are then clean.
func TestSamplerKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills a daemon over many one-second rounds")
	}
	kills := envInt(t, "LANEWATCH_CRASH_KILLS", 6)
	o := fastSim(16)
	o.Prefill, o.TokenInterval = 40*time.Millisecond, 15*time.Millisecond
	sim := simLane(t, o)
	var lanes []laneSpec
	for i := range 3 {
		lanes = append(lanes, openaiLane(fmt.Sprintf("o%d", i), "free", sim, ""), anthropicLane(fmt.Sprintf("a%d", i), "paid", sim, ""))
	}
	dir := t.TempDir()
	store := filepath.Join(dir, "samples.lp")
	cfg := writeConfig(t, filepath.Join(dir, "lanewatch.yaml"), cfgSpec{schedule: "@every 1s", storeAt: store, lanes: lanes})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))

	var rounds []storedRound
	for life := range kills {
		d := startDaemon(t, bin("sampler"), []string{"-config", cfg, "-log-format", "json"}, nil)
		d.waitLine(t, `"msg":"sampler started"`, 10*time.Second)
		// Rounds fire at +1 s, +2 s, ...; a round takes ~0.15 s. Kill
		// anywhere from before the first round to after the second.
		time.Sleep(time.Duration(800+rng.IntN(2200)) * time.Millisecond)
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if code := d.wait(t, 10*time.Second); code != -1 {
			t.Fatalf("life %d: exit code %d, want -1 (killed)", life, code)
		}
		prev := d.started
		for _, l := range lines(d.Stderr()) {
			var e struct {
				Time time.Time
				Msg  string
			}
			if json.Unmarshal([]byte(l), &e) != nil {
				t.Fatalf("life %d: stderr line is not JSON: %s", life, l)
			}
			if e.Msg == "round stored" {
				rounds = append(rounds, storedRound{life: life, after: prev, at: e.Time})
				prev = e.Time
			}
			if e.Msg == "round not stored" {
				t.Errorf("life %d: %s", life, l)
			}
		}
		// Readable right after the kill, holding every logged round.
		checkRounds(t, store, lanes, rounds, false)
	}
	if len(rounds) == 0 {
		t.Fatal("no round was stored before any kill; the test proved nothing")
	}

	// The next writer repairs the file (a torn last line is cut) and appends.
	r := run(t, invocation{bin: "sampler", args: []string{"-config", cfg, "-once"}}).want(t, 0)
	probes := checkRounds(t, store, lanes, rounds, true)
	if got, want := len(probes), len(lanes)*(len(rounds)+1); got < want {
		t.Errorf("store holds %d probes, want at least %d (%d logged rounds and the -once round, %d lanes)",
			got, want, len(rounds), len(lanes))
	}
	// The -once round's hourly points count every stored probe of its hour.
	checkHourlyCounts(t, store, probes[len(probes)-1].Time)
	t.Logf("%d kills, %d rounds logged as stored and found; %d probes readable; -once after the kills:\n%s",
		kills, len(rounds), len(probes), r.stdout)
}

// checkRounds opens the store read-only and checks every logged round is in
// it; with clean set, the read must also raise no warning.
func checkRounds(t *testing.T, path string, lanes []laneSpec, rounds []storedRound, clean bool) []store.Probe {
	t.Helper()
	var warnings []string
	st, err := file.Open(path, file.Options{ReadOnly: true, Warn: func(msg string, args ...any) {
		warnings = append(warnings, fmt.Sprint(msg, args))
	}})
	if err != nil {
		if len(rounds) == 0 {
			return nil // killed before the first write: no file is fine
		}
		t.Fatalf("store unreadable after kill -9: %v", err)
	}
	defer st.Close()
	ctx := context.Background()
	probes, err := store.ReadProbes(ctx, st, store.Between(time.Unix(0, 0), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatalf("store: probes: %v", err)
	}
	if _, err := store.ReadHourly(ctx, st, store.Between(time.Unix(0, 0), time.Now().Add(time.Hour))); err != nil {
		t.Fatalf("store: hourly: %v", err)
	}
	if clean && len(warnings) > 0 {
		t.Errorf("reads after the repair still warn: %q", warnings)
	}
	for i, rd := range rounds {
		per := map[string]int{}
		for _, p := range probes {
			if p.Time.After(rd.after) && !p.Time.After(rd.at) {
				per[p.Lane]++
			}
		}
		for _, l := range lanes {
			if per[l.name] != 1 {
				t.Errorf("round %d (life %d, stored at %s): lane %s has %d probes in (%s, %s], want 1",
					i, rd.life, rd.at.Format(time.StampMilli), l.name, per[l.name], rd.after.Format(time.StampMilli), rd.at.Format(time.StampMilli))
			}
		}
	}
	return probes
}

// checkHourlyCounts checks each lane's queue_hourly point for the hour of at
// counts exactly the probes stored for that lane and hour.
func checkHourlyCounts(t *testing.T, path string, at time.Time) {
	t.Helper()
	st, err := file.Open(path, file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := at.UTC().Truncate(time.Hour)
	ctx := context.Background()
	probes, err := store.ReadProbes(ctx, st, store.Between(h, h.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	hourly, err := store.ReadHourly(ctx, st, store.Between(h, h.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int64{}
	for _, p := range probes {
		count[p.Lane]++
	}
	if len(hourly) != len(count) {
		t.Errorf("hour %s: %d hourly points for %d lanes with probes", h, len(hourly), len(count))
	}
	for _, hr := range hourly {
		if hr.Samples != count[hr.Lane] {
			t.Errorf("hour %s lane %s: queue_hourly samples=%d, but the store holds %d probes of that hour",
				h.Format("2006-01-02T15"), hr.Lane, hr.Samples, count[hr.Lane])
		}
	}
}

// writeHistory fills a file store with days of three rounds an hour for
// lanes lanes ending at end; scale changes every queue so two histories give
// different policies.
func writeHistory(t *testing.T, path string, lanes, days int, end time.Time, scale float64, seed uint64) {
	t.Helper()
	st, err := file.Open(path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	first := end.AddDate(0, 0, -days)
	for day := first; day.Before(end); day = day.AddDate(0, 0, 1) {
		var probes []store.Probe
		var hourly []store.Hourly
		for h := range 24 {
			hour := day.Add(time.Duration(h) * time.Hour)
			diurnal := 10 * (1 + math.Sin(float64(h)/24*2*math.Pi))
			sofar := make([][]store.Probe, lanes)
			for _, m := range []int{7, 27, 47} {
				at := hour.Add(time.Duration(m) * time.Minute)
				for i := range lanes {
					kind := "free"
					if i%4 == 3 {
						kind = "paid"
					}
					p := store.Probe{Lane: fmt.Sprintf("lane-%02d", i), Kind: kind, Time: at.Add(time.Duration(i) * time.Millisecond),
						QueueS: scale * (float64(i%5) + diurnal + rng.Float64()*10), GenS: 0.3 + rng.Float64(),
						HeadersS: 0.05, Tokens: 16, OK: true, Outcome: "ok", Status: 200}
					probes = append(probes, p)
					sofar[i] = append(sofar[i], p)
					hourly = append(hourly, store.Aggregate(p.Lane, kind, "", hour, sofar[i]))
				}
			}
		}
		if err := st.Write(context.Background(), store.Batch{Probes: probes, Hourly: hourly}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPolicygenKill9 kills `policygen -day` with SIGKILL at random times
// while it rewrites a day of policy files, alternating two histories whose
// policies differ (4 x LANEWATCH_CRASH_KILLS runs, at least 24).
// After every kill each of the 24 files is whole: byte-identical to one of
// the two uninterrupted outputs, and parses. Temp files a kill leaves behind
// never look like policy files (".<hour>.yaml.tmp-*"); they are removed by a
// later run once older than an hour.
func TestPolicygenKill9(t *testing.T) {
	kills := max(4*envInt(t, "LANEWATCH_CRASH_KILLS", 6), 24)
	const lanes, days = 30, 14
	end := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	day := end.Format("2006-01-02") // the forecast of the day after the history
	dir := t.TempDir()
	var laneSpecs []laneSpec
	for i := range lanes {
		laneSpecs = append(laneSpecs, openaiLane(fmt.Sprintf("lane-%02d", i), map[bool]string{true: "paid", false: "free"}[i%4 == 3], "http://127.0.0.1:1", ""))
	}
	start := time.Now()
	cfgs := map[string]string{}
	for i, name := range []string{"a", "b"} {
		store := filepath.Join(dir, name, "samples.lp")
		writeHistory(t, store, lanes, days, end, float64(i+1), uint64(i+1))
		cfgs[name] = writeConfig(t, filepath.Join(dir, name, "lanewatch.yaml"), cfgSpec{storeAt: store, lanes: laneSpecs})
	}
	t.Logf("history: 2 stores of %d lanes x %d days in %s", lanes, days, time.Since(start).Round(time.Millisecond))

	// The two uninterrupted outputs.
	ref := map[string]map[string][]byte{}
	var runTime time.Duration
	for _, name := range []string{"a", "b"} {
		out := filepath.Join(dir, "ref-"+name)
		t0 := time.Now()
		run(t, invocation{bin: "policygen", args: []string{"-config", cfgs[name], "-day", day, "-out", out}}).want(t, 0)
		runTime = max(runTime, time.Since(t0))
		ref[name] = readPolicyDir(t, out)
		if len(ref[name]) != 24 {
			t.Fatalf("reference %s: %d files, want 24", name, len(ref[name]))
		}
	}
	for f, a := range ref["a"] {
		if bytes.Equal(a, ref["b"][f]) {
			t.Fatalf("%s is the same for both histories; the test could not tell old from new", f)
		}
	}

	out := filepath.Join(dir, "policies")
	run(t, invocation{bin: "policygen", args: []string{"-config", cfgs["a"], "-day", day, "-out", out}}).want(t, 0)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	mixed, withTemps := 0, 0 // kills after which the set mixed old and new files; temp files were present
	for k := range kills {
		name := []string{"b", "a"}[k%2]
		cmd := startDaemon(t, bin("policygen"), []string{"-config", cfgs[name], "-day", day, "-out", out}, nil)
		// Most of a run is reading the store; the writes come last. Kill
		// anywhere from half way to a little past the reference run time.
		time.Sleep(runTime/2 + time.Duration(rng.Int64N(int64(runTime*7/10))))
		_ = cmd.cmd.Process.Signal(syscall.SIGKILL)
		cmd.wait(t, 10*time.Second)

		files := readPolicyDir(t, out)
		if len(files) != 24 {
			t.Errorf("kill %d: %d policy files, want 24", k, len(files))
		}
		fromA, fromB := 0, 0
		for f, data := range files {
			switch {
			case bytes.Equal(data, ref["a"][f]):
				fromA++
			case bytes.Equal(data, ref["b"][f]):
				fromB++
			default:
				t.Errorf("kill %d: %s is neither the old nor the new file (%d bytes)", k, f, len(data))
			}
			if _, err := policy.ParseFile(data); err != nil {
				t.Errorf("kill %d: %s: %v", k, f, err)
			}
		}
		if fromA > 0 && fromB > 0 {
			mixed++ // killed between two renames
		}
		if len(tempFiles(t, out)) > 0 {
			withTemps++
		}
	}
	temps := tempFiles(t, out)
	for _, tmp := range temps {
		base := filepath.Base(tmp)
		if !strings.HasPrefix(base, ".") || strings.HasSuffix(base, ".yaml") {
			t.Errorf("temp file %s looks like a policy file", base)
		}
	}
	t.Logf("%d kills (run time %s): after %d the day mixed old and new files, after %d temp files were present; %d temp files linger",
		kills, runTime.Round(time.Millisecond), mixed, withTemps, len(temps))

	// A later run leaves young temp files alone (they may be another run's)
	// and removes those older than an hour.
	if len(temps) == 0 {
		// No kill landed inside a write: plant one as a kill would leave it.
		tmp := filepath.Join(out, "."+day+"T05.yaml.tmp-123456")
		if err := os.WriteFile(tmp, []byte("hour: \"2026-"), 0o644); err != nil {
			t.Fatal(err)
		}
		temps = []string{tmp}
	}
	run(t, invocation{bin: "policygen", args: []string{"-config", cfgs["a"], "-day", day, "-out", out}}).want(t, 0)
	if got := len(tempFiles(t, out)); got != len(temps) {
		t.Errorf("after a run: %d temp files, want the %d young ones kept", got, len(temps))
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, tmp := range temps {
		if err := os.Chtimes(tmp, old, old); err != nil {
			t.Fatal(err)
		}
	}
	run(t, invocation{bin: "policygen", args: []string{"-config", cfgs["a"], "-day", day, "-out", out}}).want(t, 0)
	if left := tempFiles(t, out); len(left) != 0 {
		t.Errorf("temp files older than an hour survived a run: %q", left)
	}
	if files := readPolicyDir(t, out); len(files) != 24 {
		t.Errorf("after cleanup: %d policy files, want 24", len(files))
	}
}

// readPolicyDir returns the *.yaml files of dir (not the dot temp files) by name.
func readPolicyDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}

// tempFiles lists what is neither a policy file nor expected in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
