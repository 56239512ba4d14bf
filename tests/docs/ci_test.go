// Package ci_test runs the shell of the CI examples in docs/ci (every
// `run:` of the GitHub Actions workflow, every `script:` of the GitLab CI
// jobs) with bash against a real store and the policygen built from this
// tree, the way each CI runs it, with the config the systemd deployment
// ships (deploy/systemd/lanewatch.yaml, its paths moved into a temp folder):
// a newcomer's job written from docs/ci alone picks a lane, falls back to
// the paid one, fails closed on exit 3 and says which key it misses. What
// needs the network (checkout, artifact actions) is not run: artifacts are
// copied between the jobs' folders, as the CI would, without their
// executable bits.
package ci_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/store"
	"github.com/lanewatch/lanewatch/store/file"
)

const repoRoot = "../.."

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// policygen builds policygen from this tree once and returns the folder that
// holds it. It skips the test while the binary has no `lane` subcommand.
func policygen(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "lanewatch-ci-test-"); buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "./cmd/policygen")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if err := exec.Command(filepath.Join(binDir, "policygen"), "lane", "-h").Run(); err != nil {
		t.Skip("policygen lane: not a subcommand of the built policygen yet (pending; un-skip at merge)")
	}
	return binDir
}

func TestMain(m *testing.M) {
	if err := os.Chdir("../../docs/ci"); err != nil {
		panic(err)
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// shippedConfig is the config deploy/systemd installs as
// /etc/lanewatch/lanewatch.yaml.
const shippedConfig = repoRoot + "/deploy/systemd/lanewatch.yaml"

// queues are the queue times (seconds) of the shipped config's lanes in the
// sampled store: the free lane fits the interactive class (60 s deadline),
// is too slow for it, or both lanes are.
var (
	freeFits = map[string]float64{"free": 2.5, "paid": 0.8}
	paidOnly = map[string]float64{"free": 90, "paid": 0.8}
	noneFits = map[string]float64{"free": 90, "paid": 95}
)

// sampled writes the shipped config, its store and policy paths moved into
// a temp folder, and a store with three ok probes of each lane in every
// hour of the last two days and this hour, queueing as queues says, the way
// the sampler does (store.Recorder), and returns the config's path.
func sampled(t *testing.T, queues map[string]float64) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, root := range []string{"/var/lib/lanewatch", "/srv/lanewatch"} {
		if !strings.Contains(text, root) {
			t.Fatalf("%s does not hold %s any more; move this test's paths with it", shippedConfig, root)
		}
		text = strings.ReplaceAll(text, root, filepath.Join(dir, root))
	}
	path := filepath.Join(dir, "lanewatch.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Store.Path), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := file.Open(cfg.Store.Path, file.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := store.NewRecorder(st, cfg.Location)
	now := time.Now()
	var probes []store.Probe
	for h := store.HourStart(now, cfg.Location).Add(-48 * time.Hour); !h.After(now); h = h.Add(time.Hour) {
		for _, m := range []time.Duration{7, 27, 47} {
			at := h.Add(m * time.Minute)
			if at.After(now) {
				at = now.Add(-time.Second)
			}
			for _, l := range cfg.Lanes {
				q, ok := queues[l.Name]
				if !ok {
					t.Fatalf("%s has lane %s, which this test gives no queue", shippedConfig, l.Name)
				}
				probes = append(probes, store.Probe{Lane: l.Name, Kind: l.Kind, Time: at, QueueS: q, GenS: 0.5,
					HeadersS: 0.1, Tokens: 16, OK: true, Outcome: "ok", Status: 200})
			}
		}
	}
	if _, err := rec.Record(context.Background(), probes); err != nil {
		t.Fatal(err)
	}
	return path
}

// shippedLane returns the shipped config's lane by name.
func shippedLane(t *testing.T, name string) config.Lane {
	t.Helper()
	cfg, err := config.Load(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range cfg.Lanes {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("%s has no lane %s", shippedConfig, name)
	return config.Lane{}
}

// runner is what a CI runner gives a job: a folder, an environment, PATH.
type runner struct {
	t    *testing.T
	dir  string
	env  map[string]string
	path []string // prepended to the system PATH
}

func newRunner(t *testing.T, env map[string]string, path ...string) *runner {
	r := &runner{t: t, dir: t.TempDir(), env: map[string]string{}, path: path}
	for k, v := range env {
		r.env[k] = v
	}
	// The repository the job checks out: the script the LLM job runs, a
	// stand-in that records what it was called with, the key it got and
	// the LANEWATCH_ variables it sees (a child process: they must be
	// exported).
	stub := "#!/bin/sh\nd=\"$(dirname \"$0\")/..\"\nprintf '%s\\n' \"$@\" \"key=${LLM_API_KEY}\" > \"$d/llm-job.called\"\nenv | grep '^LANEWATCH_' | sort > \"$d/llm-job.env\"\n"
	if err := os.MkdirAll(filepath.Join(r.dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "scripts", "llm-job.sh"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

// shell runs script with bash (flags as the CI gives them) in the runner's
// folder, with extra variables on top of the runner's, and returns its exit
// status and output.
func (r *runner) shell(script string, bashFlags []string, extra map[string]string) (int, string) {
	r.t.Helper()
	f := filepath.Join(r.t.TempDir(), "step.sh")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command("bash", append(slices.Clone(bashFlags), f)...)
	cmd.Dir = r.dir
	cmd.Env = []string{"HOME=" + r.dir, "PATH=" + strings.Join(append(slices.Clone(r.path), os.Getenv("PATH")), ":"), "LC_ALL=C"}
	for _, m := range []map[string]string{r.env, extra} {
		for k, v := range m {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return code, out.String()
}

// called returns the arguments the LLM job script got, or nil if it did not run.
func (r *runner) called() []string {
	data, err := os.ReadFile(filepath.Join(r.dir, "llm-job.called"))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// sawEnv returns the LANEWATCH_ variables the LLM job script saw.
func (r *runner) sawEnv() map[string]string {
	return envLines(r.t, filepath.Join(r.dir, "llm-job.env"))
}

// artifact copies src (a folder of one job) to dst (in the next job's) the
// way an artifact travels: contents kept, executable bits not.
func artifact(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// envLines reads NAME=VALUE lines (a $GITHUB_ENV or $GITHUB_OUTPUT file, or
// policygen lane -format dotenv).
func envLines(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			out[k] = v
		} else if sc.Text() != "" {
			t.Errorf("%s: %q is not NAME=VALUE", path, sc.Text())
		}
	}
	return out
}

// The GitHub Actions workflow, decoded strictly: a misspelt key fails.
type ghWorkflow struct {
	Name string `yaml:"name"`
	On   struct {
		Schedule []struct {
			Cron string `yaml:"cron"`
		} `yaml:"schedule"`
		WorkflowDispatch any `yaml:"workflow_dispatch"`
	} `yaml:"on"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]ghJob  `yaml:"jobs"`
}

type ghJob struct {
	Needs  any               `yaml:"needs"`
	RunsOn any               `yaml:"runs-on"`
	Env    map[string]string `yaml:"env"`
	Steps  []ghStep          `yaml:"steps"`
}

type ghStep struct {
	Name string            `yaml:"name"`
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	With map[string]any    `yaml:"with"`
	Env  map[string]string `yaml:"env"`
	Run  string            `yaml:"run"`
}

func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

var (
	secretExpr = regexp.MustCompile(`^\$\{\{ secrets\.([A-Z_][A-Z0-9_]*) \}\}$`)
	outputIf   = regexp.MustCompile(`^steps\.([a-z0-9_-]+)\.outputs\.([a-z0-9_-]+) == '([^']*)'$`)
)

// ghResult is what a run of the workflow's jobs did.
type ghResult struct {
	env     map[string]string            // $GITHUB_ENV of llm-job after its steps
	outputs map[string]map[string]string // step id → outputs
	ran     map[string]bool              // "job/step name" → ran
	failed  string                       // the step that failed, if one did
	llm     *runner                      // the llm-job runner
	logs    map[string]string            // step → output
}

// runGitHub runs the workflow's jobs in the order of their needs, each on a
// fresh runner, with the overrides on top of the workflow's env. Every
// ${{ secrets.NAME }} is "test-secret-NAME", except the missing ones, which
// are empty, as GitHub gives a secret the repository does not have.
func runGitHub(t *testing.T, wf ghWorkflow, bin string, override map[string]string, missing ...string) ghResult {
	t.Helper()
	res := ghResult{outputs: map[string]map[string]string{}, ran: map[string]bool{}, logs: map[string]string{}}
	artifacts := map[string]string{}
	for _, jobName := range []string{"policies", "llm-job"} {
		job, ok := wf.Jobs[jobName]
		if !ok {
			t.Fatalf("workflow has no job %s", jobName)
		}
		env := map[string]string{}
		for _, m := range []map[string]string{wf.Env, job.Env, override} {
			for k, v := range m {
				env[k] = v
			}
		}
		// policygen is installed on the policies runner only: llm-job must
		// use the one that came with the artifact.
		var path []string
		if jobName == "policies" {
			path = []string{bin}
		}
		r := newRunner(t, env, path...)
		if jobName == "llm-job" {
			res.llm = r
		}
		ghEnv := filepath.Join(r.dir, ".github_env")
		for i, st := range job.Steps {
			label := jobName + "/" + st.Name
			if st.If != "" {
				m := outputIf.FindStringSubmatch(st.If)
				if m == nil {
					t.Fatalf("%s: if: %q: this test reads only steps.ID.outputs.NAME == 'VALUE'", label, st.If)
				}
				if res.outputs[m[1]][m[2]] != m[3] {
					continue
				}
			}
			switch {
			case strings.HasPrefix(st.Uses, "actions/checkout@"):
				continue // the runner's folder is the checkout
			case strings.HasPrefix(st.Uses, "actions/upload-artifact@"):
				artifacts[fmt.Sprint(st.With["name"])] = filepath.Join(r.dir, fmt.Sprint(st.With["path"]))
				continue
			case strings.HasPrefix(st.Uses, "actions/download-artifact@"):
				src, ok := artifacts[fmt.Sprint(st.With["name"])]
				if !ok {
					t.Fatalf("%s: downloads artifact %v, which no earlier job uploads", label, st.With["name"])
				}
				artifact(t, src, filepath.Join(r.dir, fmt.Sprint(st.With["path"])))
				continue
			case st.Uses != "":
				t.Fatalf("%s: uses %s, which this test does not stand in for", label, st.Uses)
			case st.Run == "":
				t.Fatalf("%s: neither uses nor run", label)
			}
			if strings.Contains(st.Run, "${{") {
				t.Errorf("%s: run: holds a ${{ }} expression; pass it through env: (script injection)", label)
			}
			extra := map[string]string{
				"GITHUB_ENV":    ghEnv,
				"GITHUB_OUTPUT": filepath.Join(r.dir, fmt.Sprintf(".github_output_%d", i)),
			}
			for k, v := range st.Env {
				m := secretExpr.FindStringSubmatch(v)
				if m == nil {
					t.Fatalf("%s: env %s: %q: this test stands in for ${{ secrets.NAME }} only", label, k, v)
				}
				extra[k] = "test-secret-" + m[1]
				if slices.Contains(missing, m[1]) {
					extra[k] = ""
				}
			}
			for k, v := range envLines(t, ghEnv) {
				extra[k] = v
			}
			// GitHub's default shell: bash --noprofile --norc -eo pipefail {0}.
			code, out := r.shell(st.Run, []string{"--noprofile", "--norc", "-eo", "pipefail"}, extra)
			res.ran[label] = true
			res.logs[label] = out
			if st.ID != "" {
				res.outputs[st.ID] = envLines(t, extra["GITHUB_OUTPUT"])
			}
			if code != 0 {
				res.failed = label
				return res
			}
		}
		if jobName == "llm-job" {
			res.env = envLines(t, ghEnv)
		}
	}
	return res
}

// laneEnv is what `policygen lane -format env` gives for a lane of the
// shipped config and the interactive class.
func laneEnv(t *testing.T, name string) map[string]string {
	l := shippedLane(t, name)
	return map[string]string{
		"LANEWATCH_LANE": l.Name, "LANEWATCH_KIND": l.Kind, "LANEWATCH_API": l.API,
		"LANEWATCH_BASE_URL": l.BaseURL, "LANEWATCH_MODEL": l.Model,
		"LANEWATCH_API_KEY_ENV": l.APIKeyEnv, "LANEWATCH_CLASS": "interactive",
	}
}

// checkRanOn checks that the LLM job ran once, on the lane, with the key
// from the variable the lane's api_key_env names, and saw the lane's
// LANEWATCH_ variables in its environment.
func checkRanOn(t *testing.T, llm *runner, lane string) {
	t.Helper()
	l := shippedLane(t, lane)
	got := llm.called()
	if want := []string{l.BaseURL, l.Model, "key=test-secret-" + l.APIKeyEnv}; !slices.Equal(got, want) {
		t.Fatalf("llm-job.sh got %q, want %q", got, want)
	}
	saw := llm.sawEnv()
	for k, want := range laneEnv(t, lane) {
		if saw[k] != want {
			t.Errorf("llm-job.sh saw %s=%q, want %q (exported to the job's processes)", k, saw[k], want)
		}
	}
	if h := saw["LANEWATCH_HOUR"]; !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d$`).MatchString(h) {
		t.Errorf("llm-job.sh saw LANEWATCH_HOUR=%q", h)
	}
}

func TestGitHubActions(t *testing.T) {
	var wf ghWorkflow
	decodeStrict(t, "github-actions.yml", &wf)
	if len(wf.On.Schedule) != 1 {
		t.Fatalf("want one schedule, got %v", wf.On.Schedule)
	}
	checkSchedule(t, "github-actions.yml", wf.On.Schedule[0].Cron)
	bin := policygen(t)

	for _, c := range []struct {
		name   string
		queues map[string]float64
		lane   string
	}{
		{"the free lane fits", freeFits, "free"},
		{"the free lane does not fit: the paid one", paidOnly, "paid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runGitHub(t, wf, bin, map[string]string{"LANEWATCH_CONFIG": sampled(t, c.queues)})
			if res.failed != "" {
				t.Fatalf("step %s failed:\n%s", res.failed, res.logs[res.failed])
			}
			if res.outputs["lane"]["fits"] != "true" || !res.ran["llm-job/Run on the lane"] || res.ran["llm-job/No lane fits this hour"] {
				t.Fatalf("outputs %v, ran %v", res.outputs, res.ran)
			}
			checkRanOn(t, res.llm, c.lane)
			if log := res.logs["llm-job/Run on the lane"]; !strings.Contains(log, "lane "+c.lane+" (") {
				t.Errorf("the run step does not name the lane:\n%s", log)
			}
		})
	}

	t.Run("no lane fits: exit 3 runs nothing", func(t *testing.T) {
		res := runGitHub(t, wf, bin, map[string]string{"LANEWATCH_CONFIG": sampled(t, noneFits)})
		if res.failed != "" {
			t.Fatalf("step %s failed:\n%s", res.failed, res.logs[res.failed])
		}
		if res.outputs["lane"]["fits"] != "false" || res.ran["llm-job/Run on the lane"] || !res.ran["llm-job/No lane fits this hour"] {
			t.Fatalf("outputs %v, ran %v", res.outputs, res.ran)
		}
		for k := range res.env {
			if strings.HasPrefix(k, "LANEWATCH_") {
				t.Errorf("$GITHUB_ENV got %s although no lane fits", k)
			}
		}
		if res.llm.called() != nil {
			t.Error("the LLM job ran although no lane fits")
		}
		if log := res.logs["llm-job/Pick a lane"]; !strings.Contains(log, `no lane fits class "interactive"`) {
			t.Errorf("the pick step does not say why:\n%s", log)
		}
	})

	t.Run("a missing class fails the job", func(t *testing.T) {
		res := runGitHub(t, wf, bin, map[string]string{"LANEWATCH_CONFIG": sampled(t, freeFits), "LANEWATCH_CLASS": "nightly"})
		if res.failed != "llm-job/Pick a lane" {
			t.Fatalf("failed step %q, want llm-job/Pick a lane; ran %v", res.failed, res.ran)
		}
		if log := res.logs[res.failed]; !strings.Contains(log, "::error::policygen lane exited 1") {
			t.Errorf("the pick step does not say why it failed:\n%s", log)
		}
	})

	// A lane whose key the repository has no secret for: the run step
	// fails naming the variable, instead of dying silently under bash -e
	// or calling the lane without a key.
	t.Run("a key the step lacks fails the step, naming it", func(t *testing.T) {
		res := runGitHub(t, wf, bin, map[string]string{"LANEWATCH_CONFIG": sampled(t, paidOnly)}, shippedLane(t, "paid").APIKeyEnv)
		if res.failed != "llm-job/Run on the lane" {
			t.Fatalf("failed step %q, want llm-job/Run on the lane; ran %v", res.failed, res.ran)
		}
		want := "::error::lane paid reads its key from " + shippedLane(t, "paid").APIKeyEnv + ", which is empty or unset"
		if log := res.logs[res.failed]; !strings.Contains(log, want) {
			t.Errorf("the run step does not say which key it lacks (want %q):\n%s", want, log)
		}
		if res.llm != nil && res.llm.called() != nil {
			t.Error("the LLM job ran without its key")
		}
	})
}

// checkSchedule checks that a CI schedule runs 3 minutes after each round
// of the default schedule (7,27,47), as docs/deploy.md says.
func checkSchedule(t *testing.T, where, spec string) {
	t.Helper()
	f := strings.Fields(spec)
	round := strings.Fields(config.Default().Schedule)
	if len(f) != 5 || len(round) != 5 {
		t.Fatalf("%s: schedule %q: want 5 fields", where, spec)
	}
	var want []string
	for _, m := range strings.Split(round[0], ",") {
		n, err := strconv.Atoi(m)
		if err != nil {
			t.Fatalf("default schedule %q: %v", config.Default().Schedule, err)
		}
		want = append(want, strconv.Itoa((n+3)%60))
	}
	if f[0] != strings.Join(want, ",") || strings.Join(f[1:], " ") != strings.Join(round[1:], " ") {
		t.Errorf("%s: schedule %q, want %q: 3 minutes after the rounds %q", where, spec, strings.Join(want, ",")+" "+strings.Join(round[1:], " "), config.Default().Schedule)
	}
}

// The GitLab CI jobs, decoded strictly.
type glJob struct {
	Stage     string            `yaml:"stage"`
	Tags      []string          `yaml:"tags"`
	Needs     []string          `yaml:"needs"`
	Variables map[string]string `yaml:"variables"`
	Rules     []struct {
		If string `yaml:"if"`
	} `yaml:"rules"`
	Script    []string `yaml:"script"`
	Artifacts *struct {
		Paths    []string `yaml:"paths"`
		ExpireIn string   `yaml:"expire_in"`
	} `yaml:"artifacts"`
}

func loadGitLab(t *testing.T) (vars map[string]string, stages []string, jobs map[string]glJob) {
	t.Helper()
	data, err := os.ReadFile("gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	jobs = map[string]glJob{}
	for k, node := range top {
		var err error
		switch k {
		case "variables":
			err = node.Decode(&vars)
		case "stages":
			err = node.Decode(&stages)
		default:
			raw, _ := yaml.Marshal(&node)
			dec := yaml.NewDecoder(bytes.NewReader(raw))
			dec.KnownFields(true)
			var j glJob
			err = dec.Decode(&j)
			jobs[k] = j
		}
		if err != nil {
			t.Fatalf("gitlab-ci.yml: %s: %v", k, err)
		}
	}
	return vars, stages, jobs
}

// runGitLab runs the jobs stage by stage, each job's script lines in one
// bash with errexit and pipefail, as GitLab's shell runner does. The lanes'
// keys of the shipped config are masked CI/CD variables
// ("test-secret-NAME"), except the missing ones, which are not defined.
func runGitLab(t *testing.T, bin string, override map[string]string, missing ...string) (failed string, logs map[string]string, llm *runner) {
	t.Helper()
	vars, stages, jobs := loadGitLab(t)
	logs = map[string]string{}
	artifacts := map[string]string{}
	for _, stage := range stages {
		for _, name := range sortedJobs(jobs) {
			job := jobs[name]
			if job.Stage != stage {
				continue
			}
			for _, rule := range job.Rules {
				if rule.If != `$CI_PIPELINE_SOURCE == "schedule"` {
					t.Fatalf("%s: rule %q: this test reads only the schedule rule", name, rule.If)
				}
			}
			// The masked CI/CD variables: the lanes' keys.
			env := map[string]string{"CI_PIPELINE_SOURCE": "schedule"}
			for _, name := range []string{"free", "paid"} {
				if k := shippedLane(t, name).APIKeyEnv; k != "" && !slices.Contains(missing, k) {
					env[k] = "test-secret-" + k
				}
			}
			for _, m := range []map[string]string{vars, job.Variables, override} {
				for k, v := range m {
					env[k] = v
				}
			}
			var path []string
			if len(job.Tags) > 0 { // the lanewatch runner has policygen installed
				path = []string{bin}
			}
			r := newRunner(t, env, path...)
			for _, need := range job.Needs {
				src, ok := artifacts[need]
				if !ok {
					t.Fatalf("%s needs %s, which left no artifacts", name, need)
				}
				artifact(t, src, r.dir)
			}
			code, out := r.shell(strings.Join(job.Script, "\n")+"\n", []string{"--noprofile", "--norc", "-eo", "pipefail"}, nil)
			logs[name] = out
			if job.Artifacts != nil {
				// Artifacts are paths relative to the job's folder; keep the
				// folder, copy what they name.
				staged := t.TempDir()
				for _, p := range job.Artifacts.Paths {
					artifact(t, filepath.Join(r.dir, p), filepath.Join(staged, p))
				}
				artifacts[name] = staged
			}
			if name == "llm-job" {
				llm = r
			}
			if code != 0 {
				return name, logs, llm
			}
		}
	}
	return "", logs, llm
}

func sortedJobs(jobs map[string]glJob) []string {
	names := make([]string, 0, len(jobs))
	for n := range jobs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func TestGitLabCI(t *testing.T) {
	bin := policygen(t)

	for _, c := range []struct {
		name   string
		queues map[string]float64
		lane   string
	}{
		{"the free lane fits", freeFits, "free"},
		{"the free lane does not fit: the paid one", paidOnly, "paid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			failed, logs, llm := runGitLab(t, bin, map[string]string{"LANEWATCH_CONFIG": sampled(t, c.queues)})
			if failed != "" {
				t.Fatalf("job %s failed:\n%s", failed, logs[failed])
			}
			checkRanOn(t, llm, c.lane)
			env := envLines(t, filepath.Join(llm.dir, "lane.env"))
			if env["LANEWATCH_LANE"] != c.lane || env["LANEWATCH_CLASS"] != "interactive" {
				t.Errorf("lane.env: %v", env)
			}
		})
	}

	t.Run("no lane fits: exit 3 runs nothing", func(t *testing.T) {
		failed, logs, llm := runGitLab(t, bin, map[string]string{"LANEWATCH_CONFIG": sampled(t, noneFits)})
		if failed != "" {
			t.Fatalf("job %s failed:\n%s", failed, logs[failed])
		}
		if llm.called() != nil {
			t.Error("the LLM job ran although no lane fits")
		}
		if !strings.Contains(logs["llm-job"], "no lane fits class interactive this hour") {
			t.Errorf("llm-job does not say so:\n%s", logs["llm-job"])
		}
	})

	t.Run("a missing class fails the job", func(t *testing.T) {
		failed, logs, _ := runGitLab(t, bin, map[string]string{"LANEWATCH_CONFIG": sampled(t, freeFits), "LANEWATCH_CLASS": "nightly"})
		if failed != "llm-job" {
			t.Fatalf("failed job %q, want llm-job\n%v", failed, logs)
		}
		if !strings.Contains(logs["llm-job"], "policygen lane exited 1") {
			t.Errorf("llm-job does not say why it failed:\n%s", logs["llm-job"])
		}
	})

	t.Run("a key the job lacks fails it, naming it", func(t *testing.T) {
		key := shippedLane(t, "paid").APIKeyEnv
		failed, logs, llm := runGitLab(t, bin, map[string]string{"LANEWATCH_CONFIG": sampled(t, paidOnly)}, key)
		if failed != "llm-job" {
			t.Fatalf("failed job %q, want llm-job\n%v", failed, logs)
		}
		if want := "lane paid reads its key from " + key + ", which is empty or unset"; !strings.Contains(logs["llm-job"], want) {
			t.Errorf("llm-job does not say which key it lacks (want %q):\n%s", want, logs["llm-job"])
		}
		if llm.called() != nil {
			t.Error("the LLM job ran without its key")
		}
	})
}

// execStart returns the words of a deploy/systemd unit's ExecStart.
func execStart(t *testing.T, unit string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "systemd", unit))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			return strings.Fields(v)
		}
	}
	t.Fatalf("%s has no ExecStart", unit)
	return nil
}

// The recipes use what deploy/systemd installs: the policygen binary's name
// and the config's path of lanewatch-policygen.service, and the lanes' key
// variables of its config under the same names, secret for secret, as
// /etc/lanewatch/env (deploy/systemd/env.example) lists them.
func TestRecipesMatchTheSystemdDeployment(t *testing.T) {
	words := execStart(t, "lanewatch-policygen.service")
	bin := filepath.Base(words[0])
	i := slices.Index(words, "-config")
	if i < 0 || i+1 >= len(words) {
		t.Fatalf("lanewatch-policygen.service: no -config in %q", words)
	}
	cfgPath := words[i+1]
	if sampler := execStart(t, "lanewatch-sampler.service"); filepath.Dir(sampler[0]) != filepath.Dir(words[0]) || !slices.Contains(sampler, cfgPath) {
		t.Errorf("lanewatch-sampler.service runs %q: want the binary beside %s and -config %s", sampler, words[0], cfgPath)
	}

	cfg, err := config.Load(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, l := range cfg.Lanes {
		if l.APIKeyEnv != "" && !slices.Contains(keys, l.APIKeyEnv) {
			keys = append(keys, l.APIKeyEnv)
		}
	}
	slices.Sort(keys)
	envExample, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "systemd", "env.example"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !regexp.MustCompile(`(?m)^` + k + `=`).Match(envExample) {
			t.Errorf("deploy/systemd/env.example does not list %s, the key of a lane of %s", k, shippedConfig)
		}
	}

	var wf ghWorkflow
	decodeStrict(t, "github-actions.yml", &wf)
	if wf.Env["LANEWATCH_CONFIG"] != cfgPath {
		t.Errorf("github-actions.yml: LANEWATCH_CONFIG=%q, want %s, the config the units read", wf.Env["LANEWATCH_CONFIG"], cfgPath)
	}
	calls := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(bin) + ` -config "\$LANEWATCH_CONFIG"`)
	var runStep *ghStep
	for name, job := range wf.Jobs {
		for i, st := range job.Steps {
			if name == "policies" && st.Run != "" {
				if !calls.MatchString(st.Run) || !strings.Contains(st.Run, `"$(command -v `+bin+`)"`) {
					t.Errorf("github-actions.yml: %s/%s does not run %s, the binary the units install as %s", name, st.Name, bin, words[0])
				}
			}
			if strings.Contains(st.Run, "./scripts/llm-job.sh") {
				runStep = &job.Steps[i]
			}
		}
	}
	if runStep == nil {
		t.Fatal("github-actions.yml: no step runs the LLM job")
	}
	var mapped []string
	for k, v := range runStep.Env {
		if m := secretExpr.FindStringSubmatch(v); m == nil || m[1] != k {
			t.Errorf("github-actions.yml: %s: %s: %q: want ${{ secrets.%s }}, the key under the name the config gives it", runStep.Name, k, v, k)
		}
		mapped = append(mapped, k)
	}
	slices.Sort(mapped)
	if !slices.Equal(mapped, keys) {
		t.Errorf("github-actions.yml: %s maps %v, want the lanes' key variables of %s: %v", runStep.Name, mapped, shippedConfig, keys)
	}

	vars, _, jobs := loadGitLab(t)
	if vars["LANEWATCH_CONFIG"] != cfgPath {
		t.Errorf("gitlab-ci.yml: LANEWATCH_CONFIG=%q, want %s, the config the units read", vars["LANEWATCH_CONFIG"], cfgPath)
	}
	script := strings.Join(jobs["lanewatch-policies"].Script, "\n")
	if !calls.MatchString(script) || !strings.Contains(script, `"$(command -v `+bin+`)"`) {
		t.Errorf("gitlab-ci.yml: lanewatch-policies does not run %s, the binary the units install as %s", bin, words[0])
	}
	header, err := os.ReadFile("gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.Contains(string(header), k) {
			t.Errorf("gitlab-ci.yml does not name %s, the masked variable a lane's key comes from", k)
		}
	}
}
