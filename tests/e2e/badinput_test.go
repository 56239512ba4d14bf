package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// badCase is one bad invocation and what it must do: exit with code, and
// print exactly one line "<bin>: ..." holding every string of names.
type badCase struct {
	name  string
	bin   string
	args  []string
	stdin string
	code  int
	names []string // substrings the error line must hold (the flag, field or value)
}

// checkBad runs c and checks the exit code and stderr.
//
// Exit 1 (bad config or input) and exit 2 (bad usage): stderr is exactly one
// line, "<bin>: ...", naming the field or flag (usage text only on -h).
// Never a panic or a goroutine dump, and never anything on stdout.
func checkBad(t *testing.T, c badCase) result {
	t.Helper()
	r := run(t, invocation{bin: c.bin, args: c.args, stdin: c.stdin})
	if r.code != c.code {
		t.Errorf("exit %d, want %d\nstderr:\n%s", r.code, c.code, r.stderr)
	}
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("panic:\n%s", r.stderr)
	}
	if strings.TrimSpace(r.stdout) != "" {
		t.Errorf("stdout not empty:\n%s", r.stdout)
	}
	all := lines(r.stderr)
	var errLines []string
	for _, l := range all {
		if strings.HasPrefix(l, c.bin+": ") {
			errLines = append(errLines, l)
		}
	}
	switch {
	case len(errLines) != 1:
		t.Fatalf("%d lines start with %q, want 1:\n%s", len(errLines), c.bin+": ", r.stderr)
	case len(all) != 1:
		t.Errorf("%d lines on stderr, want 1:\n%s", len(all), r.stderr)
	}
	for _, n := range c.names {
		if !strings.Contains(errLines[0], n) {
			t.Errorf("error line %q does not name %q", errLines[0], n)
		}
	}
	return r
}

// badFixtures writes a good config (with an existing empty store), a policy
// file and a few bad inputs into a temp dir.
type badFixtures struct {
	dir, good, policy, missing string
}

func newBadFixtures(t *testing.T) badFixtures {
	t.Helper()
	dir := t.TempDir()
	f := badFixtures{dir: dir, missing: filepath.Join(dir, "does-not-exist.yaml")}
	f.good = writeConfig(t, filepath.Join(dir, "good.yaml"), cfgSpec{
		storeAt: filepath.Join(dir, "data", "samples.lp"),
		lanes:   []laneSpec{openaiLane("free", "free", "http://127.0.0.1:1", "")},
	})
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "samples.lp"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, invocation{bin: "policygen", args: []string{"-config", f.good, "-hour", "2026-11-30T14"}}).want(t, 0)
	f.policy = strings.TrimSpace(r.stdout)
	return f
}

// TestBadFlags runs every command and subcommand with bad flags and
// arguments: exit 2 for usage, 1 for a missing or bad file, one line naming
// the flag.
func TestBadFlags(t *testing.T) {
	f := newBadFixtures(t)
	lp := filepath.Join(f.dir, "data", "samples.lp")
	cases := []badCase{
		// sampler
		{name: "sampler/unknown flag", bin: "sampler", args: []string{"-bogus"}, code: 2, names: []string{"-bogus"}},
		{name: "sampler/no -config", bin: "sampler", code: 2, names: []string{"-config"}},
		{name: "sampler/-config without value", bin: "sampler", args: []string{"-config"}, code: 2, names: []string{"-config"}},
		{name: "sampler/stray argument", bin: "sampler", args: []string{"-config", f.good, "extra"}, code: 2, names: []string{`"extra"`}},
		{name: "sampler/-once=maybe", bin: "sampler", args: []string{"-config", f.good, "-once=maybe"}, code: 2, names: []string{"-once"}},
		{name: "sampler/bad -log-format", bin: "sampler", args: []string{"-config", f.good, "-log-format", "xml"}, code: 2, names: []string{"-log-format"}},
		{name: "sampler/bad -log-level", bin: "sampler", args: []string{"-config", f.good, "-log-level", "loud"}, code: 2, names: []string{"-log-level", "loud"}},
		{name: "sampler/missing config file", bin: "sampler", args: []string{"-config", f.missing, "-once"}, code: 1, names: []string{f.missing}},
		{name: "sampler/config is a folder", bin: "sampler", args: []string{"-config", f.dir, "-once"}, code: 1, names: []string{f.dir}},
		// sampler import
		{name: "import/unknown flag", bin: "sampler", args: []string{"import", "-bogus"}, code: 2, names: []string{"-bogus"}},
		{name: "import/no -config", bin: "sampler", args: []string{"import", lp}, code: 2, names: []string{"-config"}},
		{name: "import/no file", bin: "sampler", args: []string{"import", "-config", f.good}, code: 2, names: []string{"file"}},
		{name: "import/missing file", bin: "sampler", args: []string{"import", "-config", f.good, filepath.Join(f.dir, "nope.lp")}, code: 1, names: []string{"nope.lp"}},
		{name: "import/missing config", bin: "sampler", args: []string{"import", "-config", f.missing, lp}, code: 1, names: []string{f.missing}},
		// policygen
		{name: "policygen/unknown flag", bin: "policygen", args: []string{"-bogus"}, code: 2, names: []string{"-bogus"}},
		{name: "policygen/no -config", bin: "policygen", code: 2, names: []string{"-config"}},
		{name: "policygen/stray argument", bin: "policygen", args: []string{"-config", f.good, "extra"}, code: 2, names: []string{`"extra"`}},
		{name: "policygen/-hour month 13", bin: "policygen", args: []string{"-config", f.good, "-hour", "2026-13-01T00"}, code: 2, names: []string{"-hour", "2026-13-01T00"}},
		{name: "policygen/-hour without hour", bin: "policygen", args: []string{"-config", f.good, "-hour", "2026-11-30"}, code: 2, names: []string{"-hour"}},
		{name: "policygen/-hour 24", bin: "policygen", args: []string{"-config", f.good, "-hour", "2026-11-30T24"}, code: 2, names: []string{"-hour"}},
		{name: "policygen/-day Feb 30", bin: "policygen", args: []string{"-config", f.good, "-day", "2026-02-30"}, code: 2, names: []string{"-day", "2026-02-30"}},
		{name: "policygen/-day with hour", bin: "policygen", args: []string{"-config", f.good, "-day", "2026-11-30T14"}, code: 2, names: []string{"-day"}},
		{name: "policygen/-hour and -day", bin: "policygen", args: []string{"-config", f.good, "-hour", "2026-11-30T14", "-day", "2026-11-30"}, code: 2, names: []string{"-hour", "-day"}},
		{name: "policygen/missing config file", bin: "policygen", args: []string{"-config", f.missing}, code: 1, names: []string{f.missing}},
		// policygen swings
		{name: "swings/unknown flag", bin: "policygen", args: []string{"swings", "-bogus"}, code: 2, names: []string{"-bogus"}},
		{name: "swings/no -config", bin: "policygen", args: []string{"swings"}, code: 2, names: []string{"-config"}},
		{name: "swings/-days 0", bin: "policygen", args: []string{"swings", "-config", f.good, "-days", "0"}, code: 2, names: []string{"-days"}},
		{name: "swings/-days -3", bin: "policygen", args: []string{"swings", "-config", f.good, "-days", "-3"}, code: 2, names: []string{"-days"}},
		{name: "swings/-days x", bin: "policygen", args: []string{"swings", "-config", f.good, "-days", "x"}, code: 2, names: []string{"-days"}},
		{name: "swings/-format xml", bin: "policygen", args: []string{"swings", "-config", f.good, "-format", "xml"}, code: 2, names: []string{"-format", "xml"}},
		{name: "swings/stray argument", bin: "policygen", args: []string{"swings", "-config", f.good, "extra"}, code: 2, names: []string{`"extra"`}},
		{name: "swings/unknown lane", bin: "policygen", args: []string{"swings", "-config", f.good, "-lane", "nope"}, code: 1, names: []string{`"nope"`}},
		{name: "swings/missing config file", bin: "policygen", args: []string{"swings", "-config", f.missing}, code: 1, names: []string{f.missing}},
		// policygen book
		{name: "book/unknown flag", bin: "policygen", args: []string{"book", "-bogus"}, code: 2, names: []string{"-bogus"}},
		{name: "book/stray argument", bin: "policygen", args: []string{"book", "extra"}, code: 2, names: []string{`"extra"`}},
		{name: "book/-policy without -class", bin: "policygen", args: []string{"book", "-policy", f.policy}, code: 2, names: []string{"-policy", "-class"}},
		{name: "book/missing policy file", bin: "policygen", args: []string{"book", "-policy", f.missing, "-class", "interactive"}, stdin: `{"attempts":[]}`, code: 1, names: []string{f.missing}},
		{name: "book/unknown class", bin: "policygen", args: []string{"book", "-policy", f.policy, "-class", "nope"}, stdin: `{"attempts":[]}`, code: 1, names: []string{"nope"}},
		{name: "book/config as policy file", bin: "policygen", args: []string{"book", "-policy", f.good, "-class", "interactive"}, stdin: `{"attempts":[]}`, code: 1, names: []string{f.good}},
		// lanesim
		{name: "lanesim/unknown flag", bin: "lanesim", args: []string{"-bogus"}, code: 2, names: []string{"-bogus"}},
		{name: "lanesim/stray argument", bin: "lanesim", args: []string{"extra"}, code: 2, names: []string{`"extra"`}},
		{name: "lanesim/-slots 0", bin: "lanesim", args: []string{"-slots", "0"}, code: 2, names: []string{"-slots"}},
		{name: "lanesim/-fail-429 2", bin: "lanesim", args: []string{"-fail-429", "2"}, code: 2, names: []string{"-fail-429"}},
		{name: "lanesim/-curve bad", bin: "lanesim", args: []string{"-curve", "bad"}, code: 2, names: []string{"-curve"}},
		{name: "lanesim/-prefill -1s", bin: "lanesim", args: []string{"-prefill", "-1s"}, code: 2, names: []string{"-prefill"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkBad(t, c) })
	}
}

// TestBadBookInput feeds `policygen book` bad JSON on stdin: exit 1, one line
// naming the field.
func TestBadBookInput(t *testing.T) {
	const pol = `"policy":{"deadline_s":60,"ceiling_tokens":4000,"next_queue_s":20,"next_gen_s":10,"next_est_tokens":800,"paid_queue_s":1,"paid_usd_per_1k":0.002}`
	const att = `{"queue_s":1,"gen_s":1,"emitted_tokens":10,"shipped":false}`
	cases := []struct {
		name, stdin, field string
	}{
		{"empty", "", "input"},
		{"not JSON", "attempts: []", "input"},
		{"truncated", `{"attempts":[` + att, "attempts"},
		{"array at top", `[]`, "input"},
		{"missing attempts", `{` + pol + `}`, "attempts"},
		{"missing policy", `{"attempts":[]}`, "policy"},
		{"missing field in attempt", `{"attempts":[{"queue_s":1,"gen_s":1,"shipped":false}],` + pol + `}`, "attempts[0].emitted_tokens"},
		{"missing field in policy", `{"attempts":[],"policy":{"deadline_s":60}}`, "policy.ceiling_tokens"},
		{"unknown top field", `{"attempts":[],` + pol + `,"extra":1}`, "extra"},
		{"unknown attempt field", `{"attempts":[{"queue_s":1,"gen_s":1,"emitted_tokens":1,"shipped":false,"cost":2}],` + pol + `}`, "attempts[0].cost"},
		{"negative queue_s", `{"attempts":[{"queue_s":-1,"gen_s":1,"emitted_tokens":1,"shipped":false}],` + pol + `}`, "attempts[0].queue_s"},
		{"1e999 gen_s", `{"attempts":[{"queue_s":1,"gen_s":1e999,"emitted_tokens":1,"shipped":false}],` + pol + `}`, "attempts[0].gen_s"},
		{"fractional tokens", `{"attempts":[{"queue_s":1,"gen_s":1,"emitted_tokens":1.5,"shipped":false}],` + pol + `}`, "attempts[0].emitted_tokens"},
		{"string deadline", `{"attempts":[],` + strings.Replace(pol, `"deadline_s":60`, `"deadline_s":"60"`, 1) + `}`, "policy.deadline_s"},
		{"NaN literal", `{"attempts":[],` + strings.Replace(pol, `"next_queue_s":20`, `"next_queue_s":NaN`, 1) + `}`, "policy"},
		{"repeated field", `{"attempts":[],"attempts":[],` + pol + `}`, "attempts"},
		{"trailing data", `{"attempts":[],` + pol + `} {}`, "input"},
		{"second attempt bad", `{"attempts":[` + att + `,{"queue_s":1,"gen_s":1,"emitted_tokens":1,"shipped":"no"}],` + pol + `}`, "attempts[1].shipped"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkBad(t, badCase{bin: "policygen", args: []string{"book"}, stdin: c.stdin, code: 1, names: []string{c.field}})
		})
	}
	// With -policy the input is {"attempts": [...]} alone.
	f := newBadFixtures(t)
	t.Run("policy on stdin with -policy", func(t *testing.T) {
		checkBad(t, badCase{bin: "policygen", args: []string{"book", "-policy", f.policy, "-class", "interactive"},
			stdin: `{"attempts":[],` + pol + `}`, code: 1, names: []string{"policy"}})
	})
}

// TestBadConfig loads a few representative bad configs with every command
// that reads one: exit 1, one line naming the file and the field.
func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	lane := `lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: m}
`
	cases := []struct {
		name, yaml string
		names      []string // in the error line, besides the file name
		redact     string   // must not appear in stderr
	}{
		{"unknown key", "colour: blue\n" + lane, []string{"colour"}, ""},
		{"unknown lane key", "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m, apikey: K}\n", []string{"apikey"}, ""},
		{"bad timezone", "timezone: Mars/Base\n" + lane, []string{"timezone", "Mars/Base"}, ""},
		{"bad schedule", "schedule: \"61 * * * *\"\n" + lane, []string{"schedule"}, ""},
		{"bad store kind", "store: {kind: sqlite}\n" + lane, []string{"store.kind", "sqlite"}, ""},
		{"store url with password", "store: {kind: influx, url: \"http://u:hunter2-pw@127.0.0.1:8086\"}\n" + lane, []string{"store.url"}, "hunter2-pw"},
		{"no lanes", "timezone: UTC\n", []string{"lanes"}, ""},
		{"ftp base_url", "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"ftp://x\", model: m}\n", []string{"lanes[0].base_url", "ftp://x"}, ""},
		{"duplicate lane", lane + "  - {name: free, kind: paid, api: anthropic, base_url: \"http://x\", model: m}\n", []string{"lanes[1].name"}, ""},
		{"negative timeout", "probe: {timeout: -1s}\n" + lane, []string{"probe.timeout"}, ""},
		{"bad duration", "jitter: soon\n" + lane, []string{"soon"}, ""},
		{"bad class", lane + "policy:\n  classes:\n    - {name: x, deadline_s: 0, ceiling_tokens: 1, est_tokens: 1}\n", []string{"policy.classes[0].deadline_s"}, ""},
		{"not YAML", "lanes: [\n  {", []string{}, ""},
		{"tab indent", "lanes:\n\t- name: a\n", []string{}, ""},
	}
	for _, c := range cases {
		path := filepath.Join(dir, regexp.MustCompile(`\W+`).ReplaceAllString(c.name, "-")+".yaml")
		if err := os.WriteFile(path, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		lp := filepath.Join(dir, "in.lp")
		for _, cmd := range []struct {
			name, bin string
			args      []string
		}{
			{"sampler -once", "sampler", []string{"-config", path, "-once"}},
			{"sampler daemon", "sampler", []string{"-config", path}},
			{"sampler import", "sampler", []string{"import", "-config", path, lp}},
			{"policygen -hour", "policygen", []string{"-config", path, "-hour", "2026-11-30T14"}},
			{"policygen -day", "policygen", []string{"-config", path, "-day", "2026-11-30"}},
			{"policygen swings", "policygen", []string{"swings", "-config", path}},
		} {
			t.Run(c.name+"/"+cmd.name, func(t *testing.T) {
				r := checkBad(t, badCase{bin: cmd.bin, args: cmd.args, code: 1, names: append([]string{filepath.Base(path)}, c.names...)})
				if c.redact != "" {
					if strings.Contains(r.stderr, c.redact) {
						t.Errorf("stderr repeats the password %q: %s", c.redact, r.stderr)
					}
				}
			})
		}
	}

	// A lane names a key variable that is unset: the sampler refuses to
	// start, naming the variable; policygen does not need keys.
	path := writeConfig(t, filepath.Join(dir, "unset-key.yaml"), cfgSpec{
		storeAt: filepath.Join(dir, "data", "samples.lp"),
		lanes:   []laneSpec{openaiLane("free", "free", "http://127.0.0.1:1", "LW_E2E_DEFINITELY_UNSET")},
	})
	t.Run("unset key variable/sampler -once", func(t *testing.T) {
		checkBad(t, badCase{bin: "sampler", args: []string{"-config", path, "-once"}, code: 1, names: []string{"LW_E2E_DEFINITELY_UNSET", "free"}})
	})
	t.Run("unset key variable/sampler daemon", func(t *testing.T) {
		checkBad(t, badCase{bin: "sampler", args: []string{"-config", path}, code: 1, names: []string{"LW_E2E_DEFINITELY_UNSET"}})
	})
}
