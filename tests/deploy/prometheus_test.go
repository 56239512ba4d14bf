package deploy_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lanewatch/lanewatch/internal/missingtool"
)

// The alert rules under deploy/prometheus are valid rules (promtool check
// rules) and fire as their unit tests say (promtool test rules), with
// Debian's prometheus package, which .ci/run installs.
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		missingtool.Skip(t, "promtool", "apt-get install prometheus", "the alert rules are not checked")
	}
	dir := filepath.Join(repoRoot, "deploy", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "lanewatch.rules.yml"},
		{"test", "rules", "lanewatch.rules.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v in deploy/prometheus: %v\n%s", args, err, out)
		}
	}
}
