// Package scripts holds the test that keeps the README's backtest figures
// those of the one command that makes them (scripts/figures.sh, make
// figures).
package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lanewatch/lanewatch/internal/missingtool"
)

// figures builds lanesim and policygen and returns what scripts/figures.sh
// prints.
func figures(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"bash", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			missingtool.Skip(t, tool, "apt-get install "+tool, "scripts/figures.sh needs it")
		}
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/lanesim", "./cmd/policygen")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "scripts/figures.sh", t.TempDir())
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "BIN="+bin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/figures.sh: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// output is the command's output, to look figures up in.
type output struct{ lines []string }

// after returns the fields of the first line starting with prefix after
// the first line starting with header, the prefix cut off.
func (o output) after(t *testing.T, header, prefix string) []string {
	t.Helper()
	in := false
	for _, l := range o.lines {
		switch {
		case !in && strings.HasPrefix(l, header):
			in = true
		case in && strings.HasPrefix(l, prefix):
			return strings.Fields(strings.TrimPrefix(l, prefix))
		}
	}
	t.Fatalf("the output has no line %q after %q", prefix, header)
	return nil
}

// row returns the first line whose fields start with the given ones.
func (o output) row(t *testing.T, fields ...string) []string {
	t.Helper()
	for _, l := range o.lines {
		if f := strings.Fields(l); len(f) >= len(fields) && slices.Equal(f[:len(fields)], fields) {
			return f
		}
	}
	t.Fatalf("the output has no row %q", fields)
	return nil
}

// starred returns the fields of the row marked * (the best) after the
// first line starting with header, before the next empty line.
func (o output) starred(t *testing.T, header string) []string {
	t.Helper()
	in := false
	for _, l := range o.lines {
		switch {
		case !in && strings.HasPrefix(l, header):
			in = true
		case in && l == "":
			t.Fatalf("no row marked * after %q", header)
		case in && strings.Contains(l, " * "):
			return strings.Fields(l)
		}
	}
	t.Fatalf("the output has no line %q", header)
	return nil
}

// verbatimBlocks returns the lines of each fenced block the README marks
// as verbatim lines of make figures.
func verbatimBlocks(readme string) [][]string {
	var out [][]string
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "<!-- figures: verbatim lines of make figures -->" || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			continue
		}
		var block []string
		for i += 2; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			block = append(block, lines[i])
		}
		out = append(out, block)
	}
	return out
}

// Every backtest figure the README quotes is the output of make figures:
// each block it marks verbatim is made of the output's lines in their
// order, and each figure of the prose around them (and of "The numbers")
// is the one the output holds.
func TestREADMEFiguresAreMakeFigures(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	raw := figures(t)
	out := output{lines: strings.Split(strings.TrimRight(raw, "\n"), "\n")}
	for i := range out.lines {
		out.lines[i] = strings.TrimRight(out.lines[i], " ")
	}

	blocks := verbatimBlocks(readme)
	if len(blocks) < 3 {
		t.Fatalf("README.md marks %d blocks as verbatim lines of make figures, want the three of the backtest section", len(blocks))
	}
	for b, block := range blocks {
		next := 0
		for _, want := range block {
			i := slices.Index(out.lines[next:], strings.TrimRight(want, " "))
			if i < 0 {
				t.Errorf("README block %d: line %q is not in make figures' output after its line %d:\n%s", b+1, want, next, raw)
				break
			}
			next += i + 1
		}
	}

	free := out.starred(t, "sweep, free lanes")
	paid := out.after(t, "sweep, paid lanes", "calibrated "+free[1]+" d @0.95 ")
	naive, lanewatch := out.row(t, "interactive", "naive"), out.row(t, "interactive", "lanewatch")
	dev := out.after(t, "== decisions on the worlds the constants are chosen on", "lost in ")
	held := out.after(t, "== decisions on worlds they were not tuned on", "lost in ")
	cov := out.after(t, "== decisions on worlds they were not tuned on", "coverage_all more than 2 points off its target in ")
	if len(held) < 3 || len(dev) < 3 || len(cov) < 3 {
		t.Fatalf("the summaries %q, %q, %q", dev, held, cov)
	}
	off, err1 := strconv.Atoi(cov[0])
	histories, err2 := strconv.Atoi(cov[2])
	if err1 != nil || err2 != nil {
		t.Fatalf("the coverage summary %q", cov)
	}

	jobs := regexp.MustCompile(`lanewatch follows the policy \([a-z]+, lookback (\d+) days`).FindStringSubmatch(raw)
	if jobs == nil {
		t.Fatalf("make figures' output does not say which policy the jobs follow:\n%s", raw)
	}
	prose := []string{
		fmt.Sprintf("The jobs follow the config's policy (lookback %s).", jobs[1]),
		fmt.Sprintf("On it, lookback %s: **coverage %s** of the free lanes' attempts waited at most `next_queue_s` (`cov_all` %s, the failed probes' known waits counted too), median ratio %s, p90 %s; the paid lane's median ratio is %s.",
			free[1], free[9], free[10], free[11], free[12], paid[6]),
		fmt.Sprintf("The naive loop (%s %% of interactive deadlines met against lanewatch's %s %%)", naive[4], lanewatch[4]),
		fmt.Sprintf("| backtest on 28 generated days, lookback %s (`make figures`) | coverage %s; decisions lost in %s of %s held-out cells (%s of %s tuning cells); coverage_all within 2 points in %d of %d held-out histories |",
			free[1], free[9], held[0], held[2], dev[0], dev[2], histories-off, histories),
	}
	flat := strings.Join(strings.Fields(readme), " ")
	for _, p := range prose {
		if !strings.Contains(flat, p) {
			t.Errorf("README.md does not say, as make figures' output has it:\n  %s", p)
		}
	}
}
