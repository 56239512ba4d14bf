// Package deploy_test holds the deployment files under deploy/ to the code:
// every command line they hold runs a real binary with real flags, every
// config they carry loads, the paths a process writes are paths it may
// write, and the schedules that run policygen fall after the sampler's
// rounds (docs/deploy.md).
package deploy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lanewatch/lanewatch/config"
)

// repoRoot is the repository's root, seen from this package.
const repoRoot = ".."

// policygenOffset is how many minutes after each sampler round policygen
// runs (docs/deploy.md). It must cover jitter + the worst round (waves of
// probes to their timeout, plus the spread) + storeMargin.
const policygenOffset = 3

// storeMargin is the time a round needs to store its probes once the last
// one has ended, with room to spare.
const storeMargin = 20 * time.Second

// pending are the flags and subcommands that are being added to the
// commands while these files are written. A check of one that the built
// binary lacks skips with a message naming it; any other unknown flag
// fails.
var pending = map[string]bool{
	"policygen backtest": true,
}

// subcommands of each command: a first argument that is one of these is
// a subcommand, not a stray argument.
var subcommands = map[string][]string{
	"sampler":   {"import", "rollup", "probe"},
	"policygen": {"swings", "book", "lane", "backtest"},
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds sampler and policygen from this tree once per test binary
// and returns the folder that holds them.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "lanewatch-deploy-test-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "./cmd/sampler", "./cmd/policygen")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	if err := os.Chdir("../../deploy"); err != nil {
		panic(err)
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// flagSpec is what a command's -h says about its flags: name → whether it
// takes a value.
type flagSpec map[string]bool

var (
	flagsMu    sync.Mutex
	flagsCache = map[string]flagSpec{}
)

// defaultsLine is a line of flag.PrintDefaults: "  -name" for a bool flag,
// "  -name type" for one that takes a value.
var defaultsLine = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9_-]*)(?: (\S+))?`)

// flagsOf runs `cmd [sub] -h` and returns its flags, or nil when the binary
// has no such subcommand (-h does not exit 0).
func flagsOf(t *testing.T, cmd, sub string) flagSpec {
	t.Helper()
	key := cmd + " " + sub
	flagsMu.Lock()
	defer flagsMu.Unlock()
	if fs, ok := flagsCache[key]; ok {
		return fs
	}
	args := []string{"-h"}
	if sub != "" {
		args = []string{sub, "-h"}
	}
	c := exec.Command(filepath.Join(binaries(t), cmd), args...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	var fs flagSpec
	if err := c.Run(); err == nil {
		fs = flagSpec{}
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			if m := defaultsLine.FindStringSubmatch(sc.Text()); m != nil {
				fs[m[1]] = m[2] != ""
			}
		}
		if len(fs) == 0 {
			t.Fatalf("%s %s -h lists no flags:\n%s", cmd, sub, out.String())
		}
	}
	flagsCache[key] = fs
	return fs
}

// invocation is one command line of a deployment file.
type invocation struct {
	where string            // file and place, for messages
	cmd   string            // sampler | policygen
	sub   string            // subcommand, or ""
	flags map[string]string // flag → value ("true" for a bool flag)
	args  []string          // the arguments after the binary, as written
}

// commandOf maps the binary a file runs to the command it is. The binaries
// have the names `go install ./cmd/...` gives them, everywhere: no
// lanewatch-policygen beside policygen (issue 20, item 11).
func commandOf(bin string) (string, bool) {
	switch filepath.Base(bin) {
	case "sampler":
		return "sampler", true
	case "policygen":
		return "policygen", true
	}
	return "", false
}

// parseInvocation checks args against the built binary's flags: each flag
// in its own subtest, which skips for a pending flag the binary lacks and
// fails for any other. It returns the flags with their values.
func parseInvocation(t *testing.T, where, bin string, args []string) invocation {
	t.Helper()
	cmd, ok := commandOf(bin)
	if !ok {
		t.Fatalf("%s: runs %s, which is not a lanewatch command", where, bin)
	}
	inv := invocation{where: where, cmd: cmd, flags: map[string]string{}, args: args}
	rest := args
	if len(rest) > 0 && slices.Contains(subcommands[cmd], rest[0]) {
		inv.sub, rest = rest[0], rest[1:]
	}
	name := cmd
	if inv.sub != "" {
		name += " " + inv.sub
	}
	fs := flagsOf(t, cmd, inv.sub)
	if fs == nil {
		if pending[name] {
			t.Run(name, func(t *testing.T) {
				t.Skipf("%s: %q is not a subcommand of the built %s yet (pending; un-skip at merge)", where, inv.sub, cmd)
			})
			return inv
		}
		t.Fatalf("%s: %s has no subcommand %q", where, cmd, inv.sub)
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			t.Errorf("%s: %s: unexpected argument %q", where, name, a)
			continue
		}
		flag, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, known := fs[flag]
		switch {
		case !known && pending[cmd+" -"+flag]:
			t.Run(cmd+" -"+flag, func(t *testing.T) {
				t.Skipf("%s: -%s is not a flag of the built %s yet (pending; un-skip at merge)", where, flag, name)
			})
			// A pending flag takes a value unless the next word is a flag.
			if !hasVal && i+1 < len(rest) && !strings.HasPrefix(rest[i+1], "-") {
				val = rest[i+1]
				i++
			}
		case !known:
			t.Errorf("%s: -%s is not a flag of %s (it has %v)", where, flag, name, sortedKeys(fs))
			continue
		case takesValue && !hasVal:
			if i+1 >= len(rest) {
				t.Errorf("%s: -%s of %s needs a value", where, flag, name)
				continue
			}
			val = rest[i+1]
			i++
		case !takesValue && !hasVal:
			val = "true"
		}
		inv.flags[flag] = val
	}
	return inv
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkValues checks the values of the flags whose values can be checked
// without the machine they run on.
func checkValues(t *testing.T, inv invocation) {
	t.Helper()
	for flag, v := range inv.flags {
		switch flag {
		case "log-format":
			if v != "text" && v != "json" {
				t.Errorf("%s: -log-format %q: want text or json", inv.where, v)
			}
		case "day":
			if v != "today" && v != "tomorrow" {
				if _, err := time.Parse("2006-01-02", v); err != nil {
					t.Errorf("%s: -day %q: want YYYY-MM-DD, today or tomorrow", inv.where, v)
				}
			}
		case "listen":
			if !regexp.MustCompile(`^(\[[0-9a-f:]+\]|[A-Za-z0-9.-]*):[0-9]{1,5}$`).MatchString(v) {
				t.Errorf("%s: -listen %q: want HOST:PORT", inv.where, v)
			}
		}
	}
	if inv.cmd == "sampler" && inv.sub == "" && inv.flags["once"] == "" && inv.flags["listen"] == "" {
		t.Errorf("%s: a sampler daemon without -listen has no /metrics or /healthz", inv.where)
	}
}

// loadConfig loads a config of the repository with config.Load.
func loadConfig(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("%s does not load: %v", path, err)
	}
	return cfg
}

// longestTimeout is the longest probe timeout of the config's lanes.
func longestTimeout(cfg *config.Config) time.Duration {
	var d time.Duration
	for _, l := range cfg.Lanes {
		d = max(d, l.Timeout.D())
	}
	return d
}

// roundMinutes returns the minutes of the hour (in the config's timezone)
// at which the config's schedule starts rounds, read from a week of runs.
func roundMinutes(t *testing.T, cfg *config.Config) []int {
	t.Helper()
	sched, err := cron.ParseStandard(cfg.Schedule)
	if err != nil {
		t.Fatalf("schedule %q: %v", cfg.Schedule, err)
	}
	var mins []int
	at := time.Date(2026, 11, 30, 0, 0, 0, 0, cfg.Location)
	for end := at.AddDate(0, 0, 7); at.Before(end); {
		at = sched.Next(at)
		if m := at.In(cfg.Location).Minute(); !slices.Contains(mins, m) {
			mins = append(mins, m)
		}
	}
	slices.Sort(mins)
	return mins
}

// checkAfterRounds checks that minutes (of the hour, in zone) are the
// config's round minutes shifted by policygenOffset, and that the offset
// covers a round: jitter + the longest lane timeout + storeMargin.
func checkAfterRounds(t *testing.T, where string, cfg *config.Config, zone string, minutes []int) {
	t.Helper()
	if zone != cfg.Timezone {
		t.Errorf("%s: runs in %s, but the rounds run in the config's timezone %s", where, zone, cfg.Timezone)
	}
	var want []int
	for _, m := range roundMinutes(t, cfg) {
		want = append(want, (m+policygenOffset)%60)
	}
	slices.Sort(want)
	got := slices.Clone(minutes)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s: runs at minutes %v, want %v: %d minutes after each round of %q", where, got, want, policygenOffset, cfg.Schedule)
	}
	if need, off := cfg.Jitter.D()+worstRound(cfg)+storeMargin, time.Duration(policygenOffset)*time.Minute; off < need {
		t.Errorf("%s: %v after a round is too early: a round may take jitter %v + %v of probes + %v to be stored",
			where, off, cfg.Jitter.D(), worstRound(cfg), storeMargin)
	}
}

// Rounds spread their probe starts 2 ms apart, over at most 10 s
// (sampler.SpreadStep, MaxSpread).
const (
	spreadStep = 2 * time.Millisecond
	maxSpread  = 10 * time.Second
)

// worstRound is how long the probes of a round can take when every one runs
// to its timeout: waves of concurrency probes, plus the spread of their
// starts. A shard owns fewer lanes; all of them is the bound.
func worstRound(cfg *config.Config) time.Duration {
	n, c := len(cfg.Lanes), max(cfg.Concurrency, 1)
	waves := (n + c - 1) / c
	return time.Duration(waves)*longestTimeout(cfg) + min(time.Duration(n)*spreadStep, maxSpread)
}

// checkLateEvening checks that a nightly forecast run at hh:mm in zone is
// in the last hours of the config's day, so that -day tomorrow is the day
// that follows and as much of today as possible is in its history.
func checkLateEvening(t *testing.T, where string, cfg *config.Config, zone string, hh, mm int) {
	t.Helper()
	if zone != cfg.Timezone {
		t.Errorf("%s: runs in %s, want the config's timezone %s", where, zone, cfg.Timezone)
	}
	if hh < 20 || hh > 23 || mm < 0 || mm > 59 {
		t.Errorf("%s: runs at %02d:%02d, want late in the evening (20:00-23:59)", where, hh, mm)
	}
}

// underAny reports whether path is one of dirs or inside one.
func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// writes returns the paths a command writes with cfg: the store's files for
// the sampler, policy.out for policygen.
func writes(cmd string, cfg *config.Config) map[string]string {
	switch cmd {
	case "sampler":
		w := map[string]string{"store.spool": filepath.Dir(cfg.Store.Spool), "store.dead_letter": filepath.Dir(cfg.Store.DeadLetter)}
		if cfg.Store.Kind == config.StoreFile {
			w = map[string]string{"store.path": filepath.Dir(cfg.Store.Path)}
		}
		if cfg.Policy.Write { // the hour's policy file after each round
			w["policy.out"] = cfg.Policy.Out
		}
		return w
	case "policygen":
		return map[string]string{"policy.out": cfg.Policy.Out}
	}
	return nil
}

// envNeeded returns the variables a command reads with cfg: every lane's key
// for the sampler, and the store's token for any command that opens it.
func envNeeded(cmd string, cfg *config.Config) []string {
	var names []string
	if cmd == "sampler" {
		for _, l := range cfg.Lanes {
			if l.APIKeyEnv != "" && !slices.Contains(names, l.APIKeyEnv) {
				names = append(names, l.APIKeyEnv)
			}
		}
	}
	if cfg.Store.TokenEnv != "" {
		names = append(names, cfg.Store.TokenEnv)
	}
	return names
}

// runPolicygen runs the binary with args against a copy of the config whose
// absolute paths under each of roots are moved into a temp folder, and
// returns the folder policy.out maps to. Only for the file store: InfluxDB
// would need a server.
func runPolicygen(t *testing.T, cfgPath string, args []string, roots ...string) string {
	t.Helper()
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	text := string(data)
	for _, r := range roots {
		text = strings.ReplaceAll(text, r, filepath.Join(tmp, r))
	}
	copyPath := filepath.Join(tmp, "lanewatch.yaml")
	if err := os.WriteFile(copyPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := loadConfig(t, copyPath)
	args = slices.Clone(args)
	for i := range args {
		if i > 0 && args[i-1] == "-config" {
			args[i] = copyPath
		}
	}
	cmd := exec.Command(filepath.Join(binaries(t), "policygen"), args...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("policygen %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return cfg.Policy.Out
}
