package ci_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pick-lane.sh, the README's recipe, under bash -e: it runs the command
// with the lane exported, says why and exits 3 when no lane fits, and
// fails closed on a missing file or key.
func TestPickLaneRecipe(t *testing.T) {
	bin := policygen(t)
	cfg, noneCfg := sampled(t, freeFits), sampled(t, noneFits) // the shipped config: a lane fits; none does
	script, err := filepath.Abs("pick-lane.sh")
	if err != nil {
		t.Fatal(err)
	}
	run := func(cfg, class string, env ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command("bash", script, "sh", "-c", `echo "$LANEWATCH_LANE $LANEWATCH_BASE_URL $LLM_API_KEY"`)
		cmd.Env = append([]string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
			"LANEWATCH_CONFIG=" + cfg, "LANEWATCH_CLASS=" + class}, env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), stdout.String(), stderr.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, stdout.String(), stderr.String()
	}
	// Before policygen wrote a file: fail closed.
	if code, out, errs := run(cfg, "interactive", "OPENROUTER_API_KEY=sk-test"); code != 1 || out != "" || !strings.Contains(errs, "no policy file") {
		t.Errorf("no file: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, c := range []string{cfg, noneCfg} {
		if b, err := exec.Command(filepath.Join(bin, "policygen"), "-config", c).CombinedOutput(); err != nil {
			t.Fatalf("policygen: %v\n%s", err, b)
		}
	}
	free := shippedLane(t, "free")
	for _, tc := range []struct {
		name, cfg, class string
		env              []string
		code             int
		stdout, err      string
	}{
		{"a lane fits", cfg, "interactive", []string{free.APIKeyEnv + "=sk-test"}, 0, "free " + free.BaseURL + " sk-test\n", ""},
		{"key not set", cfg, "interactive", nil, 1, "", "needs its key in $" + free.APIKeyEnv + ", which is not set"},
		{"no lane fits", noneCfg, "interactive", nil, 3, "", "no lane fits class interactive this hour; the next hour it fits: none in the policy files"},
		{"unknown class", cfg, "nope", nil, 1, "", `class "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(tc.cfg, tc.class, tc.env...)
			if code != tc.code || out != tc.stdout || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr with %q", code, out, errs, tc.code, tc.stdout, tc.err)
			}
		})
	}
}
