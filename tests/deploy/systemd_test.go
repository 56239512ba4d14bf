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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lanewatch/lanewatch/config"

	"github.com/lanewatch/lanewatch/internal/missingtool"
)

// unitFile is a parsed systemd unit or timer.
type unitFile struct {
	path     string
	comments []string                       // the comment lines, in order
	sections map[string]map[string][]string // section → key → values, in order
}

// get returns the last value of key in section ("" if unset).
func (u *unitFile) get(section, key string) string {
	vs := u.sections[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// parseUnit reads a unit file: sections, key=value lines (a key may repeat;
// an empty value resets it, as systemd does), comments and continuation
// lines. A line that is none of these fails the test.
func parseUnit(t *testing.T, path string) *unitFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := &unitFile{path: path, sections: map[string]map[string][]string{}}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		for strings.HasSuffix(line, `\`) && sc.Scan() {
			n++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(sc.Text())
		}
		switch {
		case line == "":
		case line[0] == '#' || line[0] == ';':
			u.comments = append(u.comments, strings.TrimSpace(line[1:]))
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			if u.sections[section] == nil {
				u.sections[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", path, n, line)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if v == "" {
				delete(u.sections[section], k)
				continue
			}
			u.sections[section][k] = append(u.sections[section][k], v)
		}
	}
	return u
}

// installRE matches an install step in a file's header comment:
// "install ... deploy/systemd/lanewatch.yaml /etc/lanewatch/lanewatch.yaml".
var installRE = regexp.MustCompile(`^install\s.*?(deploy/\S+)\s+(/\S+)`)

// installs returns what the comment lines install: destination → repository
// file, and fails for a repository file that does not exist.
func installs(t *testing.T, where string, comments []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range comments {
		m := installRE.FindStringSubmatch(c)
		if m == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(repoRoot, m[1])); err != nil {
			t.Errorf("%s: installs %s, which is not in the repository", where, m[1])
		}
		out[m[2]] = m[1]
	}
	return out
}

// allInstalls returns, over every file under deploy/, the repository files
// installed at each destination (a destination such as
// /etc/lanewatch/lanewatch.yaml may take one of several configs).
func allInstalls(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var comments []string
		for _, line := range strings.Split(string(data), "\n") {
			if s := strings.TrimSpace(line); strings.HasPrefix(s, "#") {
				comments = append(comments, strings.TrimSpace(strings.TrimPrefix(s, "#")))
			}
		}
		for dest, src := range installs(t, path, comments) {
			if !slices.Contains(out[dest], src) {
				out[dest] = append(out[dest], src)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// envFileNames reads the variable names of an environment file.
func envFileNames(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(k) {
			t.Errorf("%s: %q is not NAME=VALUE", path, line)
			continue
		}
		vars[k] = v
	}
	return vars
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func unitFiles(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("systemd", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s under deploy/systemd (%v)", pattern, err)
	}
	return files
}

// unitService is a checked service unit: its command line and the configs it
// may run with.
type unitService struct {
	unit    *unitFile
	inv     invocation
	configs []string // repository configs installed at its -config path
}

// checkService checks one service unit and returns what the timer checks
// need.
func checkService(t *testing.T, path string, every map[string][]string) unitService {
	t.Helper()
	u := parseUnit(t, path)
	name := filepath.Base(path)
	own := installs(t, name, u.comments)
	for _, c := range u.comments {
		if strings.HasPrefix(c, "cp ") {
			for _, f := range strings.Fields(c)[1:] {
				if strings.HasPrefix(f, "deploy/") {
					if _, err := os.Stat(filepath.Join(repoRoot, f)); err != nil {
						t.Errorf("%s: its install steps copy %s, which is not in the repository", name, f)
					}
				}
			}
		}
	}
	svc := u.sections["Service"]
	if svc == nil {
		t.Fatalf("%s: no [Service] section", name)
	}

	// The environment files: where each comes from, and what it sets.
	env := map[string]string{}
	provided := map[string]bool{}
	for _, ef := range svc["EnvironmentFile"] {
		dest := strings.TrimPrefix(ef, "-")
		src, ok := own[dest]
		if !ok && len(every[dest]) > 0 {
			src = every[dest][0]
		}
		if !ok && len(every[dest]) == 0 {
			t.Errorf("%s: EnvironmentFile %s: no file under deploy/ installs it", name, dest)
			continue
		}
		for k, v := range envFileNames(t, filepath.Join(repoRoot, src)) {
			env[k] = v
			provided[k] = true
		}
	}

	// The command line, with ${VAR} from the environment files and %i as
	// shard 0.
	exec := u.get("Service", "ExecStart")
	if exec == "" || len(svc["ExecStart"]) != 1 {
		t.Fatalf("%s: want one ExecStart, got %q", name, svc["ExecStart"])
	}
	if strings.ContainsAny(exec, `"'`) {
		t.Fatalf("%s: ExecStart has quotes, which this test does not parse: %s", name, exec)
	}
	expand := func(s, instance string) string {
		s = strings.ReplaceAll(s, "%i", instance)
		return envRef.ReplaceAllStringFunc(s, func(ref string) string {
			v := envRef.FindStringSubmatch(ref)[1]
			if !provided[v] {
				t.Errorf("%s: ExecStart uses ${%s}, which no EnvironmentFile sets", name, v)
			}
			return env[v]
		})
	}
	words := strings.Fields(expand(exec, "0"))
	s := unitService{unit: u, inv: parseInvocation(t, name, words[0], words[1:])}
	checkValues(t, s.inv)
	template := strings.Contains(name, "@.")
	if template != strings.Contains(exec, "%i") {
		t.Errorf("%s: a template unit uses %%i as its shard, and only a template does", name)
	}

	// -shard I/N of a template: the instance is the shard index.
	if template {
		raw := strings.Fields(exec)
		i := slices.Index(raw, "-shard")
		if i < 0 || i+1 >= len(raw) || !strings.HasPrefix(raw[i+1], "%i/") {
			t.Errorf("%s: want -shard %%i/${...}, got %s", name, exec)
		} else {
			n, err := strconv.Atoi(expand(strings.TrimPrefix(raw[i+1], "%i/"), "0"))
			if err != nil || n < 2 {
				t.Errorf("%s: shard count %q: want a number >= 2 from an EnvironmentFile", name, raw[i+1])
			}
			for idx := range n {
				sh, err := config.ParseShard(expand(raw[i+1], strconv.Itoa(idx)))
				if err != nil || sh.Index != idx || sh.Count != n {
					t.Errorf("%s: instance %d gives -shard %s: %v", name, idx, expand(raw[i+1], strconv.Itoa(idx)), err)
				}
			}
		}
	}

	// The config: installed by this unit, or by another file under deploy/.
	cfgPath := s.inv.flags["config"]
	if cfgPath == "" {
		t.Fatalf("%s: ExecStart has no -config", name)
	}
	if src, ok := own[cfgPath]; ok {
		s.configs = []string{src}
	} else {
		s.configs = every[cfgPath]
	}
	if len(s.configs) == 0 {
		t.Fatalf("%s: -config %s: no file under deploy/ installs it", name, cfgPath)
	}

	// What it may write: its StateDirectory and ReadWritePaths; with
	// ProtectSystem=strict nothing else.
	if u.get("Service", "ProtectSystem") != "strict" {
		t.Errorf("%s: want ProtectSystem=strict", name)
	}
	var writable []string
	for _, sd := range svc["StateDirectory"] {
		for _, d := range strings.Fields(sd) {
			writable = append(writable, "/var/lib/"+d)
		}
	}
	for _, rw := range svc["ReadWritePaths"] {
		writable = append(writable, strings.Fields(rw)...)
	}
	if wd := u.get("Service", "WorkingDirectory"); wd != "" && !underAny(wd, writable) {
		t.Errorf("%s: WorkingDirectory %s is not its StateDirectory", name, wd)
	}
	if u.get("Service", "DynamicUser") == "yes" && len(svc["StateDirectory"]) > 0 && u.get("Service", "User") != "lanewatch" {
		t.Errorf("%s: a dynamic user sharing StateDirectory with the other units needs User=lanewatch", name)
	}
	checkReadable(t, name, u, s, svc)
	for _, src := range s.configs {
		cfg := loadConfig(t, filepath.Join(repoRoot, src))
		for key, dir := range writes(s.inv.cmd, cfg) {
			if !filepath.IsAbs(dir) || !underAny(dir, writable) {
				t.Errorf("%s with %s: %s is in %s, which the unit may not write (it may write %v)", name, src, key, dir, writable)
			}
		}
		for _, v := range envNeeded(s.inv.cmd, cfg) {
			if !provided[v] {
				t.Errorf("%s with %s: the config reads $%s, which none of its EnvironmentFiles %v sets", name, src, v, svc["EnvironmentFile"])
			}
		}
		if s.inv.cmd == "sampler" {
			// The round in flight is stored on SIGTERM: longest timeout + 1m.
			stop, err := strconv.Atoi(u.get("Service", "TimeoutStopSec"))
			if need := longestTimeout(cfg) + time.Minute; err != nil || float64(stop) < need.Seconds() {
				t.Errorf("%s with %s: TimeoutStopSec=%s, want at least %v for the round in flight", name, src, u.get("Service", "TimeoutStopSec"), need)
			}
		}
	}
	return s
}

// checkReadable checks that what other users must read, they can: a file
// store to a CI runner in group lanewatch (docs/ci/github-actions.yml runs
// policygen against it on the sampler's host), the policy files to
// everyone. DynamicUser=yes puts the state folder under /var/lib/private
// (0700), which no other user can enter; the folder's mode and the
// process's umask decide the rest.
func checkReadable(t *testing.T, name string, u *unitFile, s unitService, svc map[string][]string) {
	t.Helper()
	perm := func(key, def string) int {
		v := u.get("Service", key)
		if v == "" {
			v = def
		}
		n, err := strconv.ParseInt(v, 8, 32)
		if err != nil {
			t.Errorf("%s: %s=%s is not an octal mode", name, key, v)
		}
		return int(n)
	}
	if len(svc["StateDirectory"]) > 0 {
		if u.get("Service", "DynamicUser") == "yes" {
			t.Errorf("%s: DynamicUser=yes keeps the store under /var/lib/private (0700): a CI runner on the host cannot read it", name)
		}
		if mode := perm("StateDirectoryMode", "0755"); mode&0o050 != 0o050 {
			t.Errorf("%s: StateDirectoryMode=%04o: group lanewatch (a CI runner) cannot read the store's folder", name, mode)
		}
		if u.get("Service", "Group") != "lanewatch" {
			t.Errorf("%s: Group=%q, want lanewatch, the group a CI runner joins to read the store", name, u.get("Service", "Group"))
		}
	}
	umask := perm("UMask", "0022")
	switch s.inv.cmd {
	case "sampler":
		if umask&0o040 != 0 {
			t.Errorf("%s: UMask=%04o: the store's files are not group-readable", name, umask)
		}
	case "policygen":
		if umask&0o044 != 0 {
			t.Errorf("%s: UMask=%04o: the policy files are not readable by everyone", name, umask)
		}
	}
}

func TestSystemdServices(t *testing.T) {
	every := allInstalls(t)
	for _, path := range unitFiles(t, "*.service") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			checkService(t, path, every)
		})
	}
}

// onCalendarRE reads the one OnCalendar form the timers use:
// "*-*-* HOURS:MINUTES:00 ZONE", HOURS and MINUTES "*" or lists.
var onCalendarRE = regexp.MustCompile(`^\*-\*-\* (\*|[0-9,]+):([0-9,]+):00 (\S+)$`)

func numbers(t *testing.T, where, list string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q is not a list of numbers", where, list)
		}
		out = append(out, n)
	}
	return out
}

func TestSystemdTimers(t *testing.T) {
	every := allInstalls(t)
	for _, path := range unitFiles(t, "*.timer") {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			u := parseUnit(t, path)
			target := u.get("Timer", "Unit")
			if target == "" {
				target = strings.TrimSuffix(name, ".timer") + ".service"
			}
			s := checkService(t, filepath.Join("systemd", target), every)
			if s.inv.cmd != "policygen" {
				t.Fatalf("%s starts %s, want policygen", name, s.inv.cmd)
			}
			if u.get("Install", "WantedBy") != "timers.target" {
				t.Errorf("%s: want WantedBy=timers.target", name)
			}
			cal := u.sections["Timer"]["OnCalendar"]
			if len(cal) != 1 {
				t.Fatalf("%s: want one OnCalendar, got %q", name, cal)
			}
			m := onCalendarRE.FindStringSubmatch(cal[0])
			if m == nil {
				t.Fatalf("%s: OnCalendar=%s: want \"*-*-* H:MM:00 ZONE\"", name, cal[0])
			}
			for _, src := range s.configs {
				cfg := loadConfig(t, filepath.Join(repoRoot, src))
				where := name + " with " + src
				if day := s.inv.flags["day"]; day != "" {
					if day != "tomorrow" {
						t.Errorf("%s: a nightly forecast writes -day tomorrow, not %q", where, day)
					}
					hh, mm := numbers(t, where, m[1]), numbers(t, where, m[2])
					if len(hh) != 1 || len(mm) != 1 {
						t.Fatalf("%s: want one run a day, got %s", where, cal[0])
					}
					checkLateEvening(t, where, cfg, m[3], hh[0], mm[0])
					continue
				}
				if m[1] != "*" {
					t.Errorf("%s: want every hour, got %s", where, cal[0])
				}
				checkAfterRounds(t, where, cfg, m[3], numbers(t, where, m[2]))
			}
			if acc := u.get("Timer", "AccuracySec"); s.inv.flags["day"] == "" && acc != "1s" {
				t.Errorf("%s: AccuracySec=%q: the default (1min) can run it before the round is stored; want 1s", name, acc)
			}
		})
	}
}

// The policygen command lines of the units run, as written, against each
// file-store config they may carry (paths moved into a temp folder), and
// write what they say.
func TestSystemdPolicygenRuns(t *testing.T) {
	every := allInstalls(t)
	for _, path := range unitFiles(t, "lanewatch-policygen*.service") {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			s := checkService(t, path, every)
			for _, src := range s.configs {
				cfg := loadConfig(t, filepath.Join(repoRoot, src))
				if cfg.Store.Kind != config.StoreFile {
					t.Logf("%s with %s: not run: the store is InfluxDB", name, src)
					continue
				}
				out := runPolicygen(t, filepath.Join(repoRoot, src), s.inv.args, "/var/lib/lanewatch", "/srv/lanewatch")
				files, _ := filepath.Glob(filepath.Join(out, "*.yaml"))
				want := 1
				if s.inv.flags["day"] != "" {
					want = 24
				}
				if len(files) != want {
					t.Errorf("%s with %s: wrote %d policy files, want %d", name, src, len(files), want)
				}
			}
		})
	}
}

// systemd-analyze verify, where it is installed, reads the units as systemd
// does: unknown keys, bad values and bad calendar specs are errors.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		missingtool.Skip(t, "systemd-analyze", "apt-get install systemd", "the units are not verified as systemd reads them")
	}
	root := t.TempDir()
	for _, d := range []string{"etc/systemd/system", "usr/local/bin", "usr/lib/systemd"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The stock units (sysinit.target, timers.target...) and stand-ins for
	// the binaries, which verify wants to exist.
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Skipf("no stock units to verify against: %v %s", err, out)
	}
	for _, b := range []string{"sampler", "policygen"} {
		if err := os.WriteFile(filepath.Join(root, "usr/local/bin", b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, pattern := range []string{"*.service", "*.timer"} {
		for _, path := range unitFiles(t, pattern) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(path)
			if err := os.WriteFile(filepath.Join(root, "etc/systemd/system", name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			names = append(names, strings.Replace(name, "@.", "@0.", 1)) // an instance of a template
		}
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--root=" + root}, names...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify %v: %v\n%s", names, err, out)
	}
}

// cronLine is one job of a crontab in /etc/cron.d form.
type cronLine struct {
	n        int
	schedule []string // the five time fields
	user     string
	command  []string
}

func parseCron(t *testing.T, path string) (jobs []cronLine, env map[string]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env = map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#':
		case regexp.MustCompile(`^[A-Z_]+=`).MatchString(line):
			k, v, _ := strings.Cut(line, "=")
			env[k] = v
		default:
			f := strings.Fields(line)
			if len(f) < 7 {
				t.Fatalf("%s:%d: want 5 time fields, a user and a command: %q", path, i+1, line)
			}
			jobs = append(jobs, cronLine{n: i + 1, schedule: f[:5], user: f[5], command: f[6:]})
		}
	}
	return jobs, env
}

func TestCron(t *testing.T) {
	every := allInstalls(t)
	path := filepath.Join("cron", "lanewatch.cron")
	jobs, env := parseCron(t, path)
	if len(jobs) == 0 {
		t.Fatalf("%s: no jobs", path)
	}
	if !strings.Contains(env["PATH"], "/usr/local/bin") {
		t.Errorf("%s: PATH=%q does not hold /usr/local/bin, where the binaries go", path, env["PATH"])
	}
	hourly, nightly := 0, 0
	for _, j := range jobs {
		where := fmt.Sprintf("%s:%d", path, j.n)
		spec := strings.Join(j.schedule, " ")
		if _, err := cron.ParseStandard(spec); err != nil {
			t.Errorf("%s: %q: %v", where, spec, err)
			continue
		}
		// The command, without its redirections.
		var words []string
		for _, w := range j.command {
			if !strings.ContainsAny(w, "<>") {
				words = append(words, w)
			}
		}
		inv := parseInvocation(t, where, words[0], words[1:])
		checkValues(t, inv)
		if inv.cmd != "policygen" {
			t.Errorf("%s: runs %s: the sampler is a daemon, not a cron job", where, inv.cmd)
			continue
		}
		configs := every[inv.flags["config"]]
		if len(configs) == 0 {
			t.Fatalf("%s: -config %s: no file under deploy/ installs it", where, inv.flags["config"])
		}
		for _, src := range configs {
			cfg := loadConfig(t, filepath.Join(repoRoot, src))
			w := where + " with " + src
			// cron runs in the system's zone; the file says to keep it
			// equal to the config's.
			if inv.flags["day"] != "" {
				nightly++
				hh, mm := numbers(t, w, j.schedule[1]), numbers(t, w, j.schedule[0])
				if len(hh) != 1 || len(mm) != 1 || j.schedule[2] != "*" || j.schedule[3] != "*" || j.schedule[4] != "*" {
					t.Errorf("%s: want one run a day, got %q", w, spec)
					continue
				}
				checkLateEvening(t, w, cfg, cfg.Timezone, hh[0], mm[0])
				continue
			}
			hourly++
			if j.schedule[1] != "*" || j.schedule[2] != "*" || j.schedule[3] != "*" || j.schedule[4] != "*" {
				t.Errorf("%s: want every hour, got %q", w, spec)
			}
			checkAfterRounds(t, w, cfg, cfg.Timezone, numbers(t, w, j.schedule[0]))
		}
	}
	if hourly == 0 || nightly == 0 {
		t.Errorf("%s: want an hourly policygen line and a nightly -day tomorrow line", path)
	}
}
