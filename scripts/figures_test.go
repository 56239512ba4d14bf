// Package scripts holds the test that keeps the README's backtest figures
// those of the one command that makes them (scripts/figures.sh, make
// figures), which make demo runs too.
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

var columns = regexp.MustCompile(`\s{2,}`)

// cell is one cell of the grid: "met / fraction[ / abandoned]".
type cell struct{ met, frac, abandoned string }

// grid returns the grid's cell of profile, class and deadline for
// strategy (a column of its header).
func (o output) grid(t *testing.T, profile, class, deadline, strategy string) cell {
	t.Helper()
	var header []string
	for _, l := range o.lines {
		cols := columns.Split(strings.TrimSpace(l), -1)
		if len(cols) > 0 && cols[0] == "profile" {
			header = cols
			continue
		}
		if header == nil || len(cols) != len(header) || cols[0] != profile || cols[1] != class || cols[2] != deadline {
			continue
		}
		i := slices.Index(header, strategy)
		if i < 0 {
			t.Fatalf("the grid has no column %q: %q", strategy, header)
		}
		parts := strings.Split(cols[i], " / ")
		c := cell{met: parts[0], frac: parts[1]}
		if len(parts) > 2 {
			c.abandoned = parts[2]
		}
		return c
	}
	t.Fatalf("the grid has no row %s %s %s", profile, class, deadline)
	return cell{}
}

// num parses a figure of the output.
func num(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("figure %q: %v", s, err)
	}
	return x
}

// bounds returns the ends of a range "a-b" (or a, a for "a").
func bounds(r string) (string, string) {
	lo, hi, ok := strings.Cut(r, "-")
	if !ok {
		return r, r
	}
	return lo, hi
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
// is the one the output holds. make demo runs the same command.
func TestREADMEFiguresAreMakeFigures(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	demo, err := os.ReadFile("demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^scripts/figures\.sh `).Match(demo) {
		t.Error("scripts/demo.sh does not run scripts/figures.sh: the demo would not show the README's figures")
	}
	raw := figures(t)
	out := output{lines: strings.Split(strings.TrimRight(raw, "\n"), "\n")}
	for i := range out.lines {
		out.lines[i] = strings.TrimRight(out.lines[i], " ")
	}

	blocks := verbatimBlocks(readme)
	if len(blocks) < 2 {
		t.Fatalf("README.md marks %d blocks as verbatim lines of make figures, want the two of the backtest section", len(blocks))
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

	free7 := out.after(t, "sweep, free lanes", "calibrated 7 d @0.95 *")
	paid7 := out.after(t, "sweep, paid lanes", "calibrated 7 d @0.95")
	naive, lanewatch := out.row(t, "interactive", "naive"), out.row(t, "interactive", "lanewatch")
	hi60 := out.grid(t, "harsh", "interactive", "60 s", "lanewatch")
	hi60f30 := out.grid(t, "harsh", "interactive", "60 s", "fallback@30")
	hi30 := out.grid(t, "harsh", "interactive", "30 s", "lanewatch")
	hi30f5 := out.grid(t, "harsh", "interactive", "30 s", "fallback@5")
	hb60 := out.grid(t, "harsh", "batch", "60 s", "lanewatch")
	mi60 := out.grid(t, "mild", "interactive", "60 s", "lanewatch")
	fallbacks := []string{"fallback@5", "fallback@10", "fallback@20", "fallback@30", "fallback@45"}
	// The fallback that meets most of harsh batch's 60 s deadlines (by the
	// top of its range), and the range of the fallbacks' costs on mild
	// interactive at 60 s.
	bestBatch, mildLo, mildHi := "", "", ""
	for _, f := range fallbacks {
		c := out.grid(t, "harsh", "batch", "60 s", f)
		_, best := bounds(bestBatch)
		if _, hi := bounds(c.met); bestBatch == "" || num(t, hi) > num(t, best) {
			bestBatch = c.met
		}
		lo, hi := bounds(out.grid(t, "mild", "interactive", "60 s", f).frac)
		if mildLo == "" || num(t, lo) < num(t, mildLo) {
			mildLo = lo
		}
		if mildHi == "" || num(t, hi) > num(t, mildHi) {
			mildHi = hi
		}
	}
	mildFallbacks := mildLo
	if mildHi != mildLo {
		mildFallbacks += "-" + mildHi
	}
	dominated := out.lines[len(out.lines)-1]
	m := regexp.MustCompile(`^a fallback@T dominates lanewatch in (\S+) of (\d+) cells`).FindStringSubmatch(dominated)
	if m == nil {
		t.Fatalf("the output's last line %q does not say how many cells a fallback dominates", dominated)
	}

	prose := []string{
		fmt.Sprintf("lookback 7: **coverage %s** of the free lanes' attempts waited at most `next_queue_s` (`cov_all` %s, the failed probes' known waits counted too), median ratio %s, p90 %s; the paid lane's median ratio is %s.",
			free7[4], free7[5], free7[6], free7[7], paid7[6]),
		fmt.Sprintf("The naive loop (%s %% of interactive deadlines met against lanewatch's %s %%)", naive[4], lanewatch[4]),
		fmt.Sprintf("harsh, interactive, 60 s: lanewatch meets %s %% at %s of the cost of always paying; the closest fallback, `fallback@30`, %s %% at %s;",
			hi60.met, hi60.frac, hi60f30.met, hi60f30.frac),
		fmt.Sprintf("harsh, interactive, 30 s: %s %% at %s against `fallback@5`'s %s %% at %s:", hi30.met, hi30.frac, hi30f5.met, hi30f5.frac),
		fmt.Sprintf("batch at 60 s (only the paid lane fits): %s %% against %s %% at best for any fallback", hb60.met, bestBatch),
		fmt.Sprintf("mild: %s %% of interactive deadlines at %s against %s for the fallbacks.", mi60.met, mi60.frac, mildFallbacks),
		fmt.Sprintf("| backtest on 28 generated days, lookback 7 (`make figures`) | coverage %s; harsh interactive 60 s: %s %% met at %s of always-paid vs `fallback@30` %s %% at %s (dominated in %s of %s cells) |",
			free7[4], hi60.met, hi60.frac, hi60f30.met, hi60f30.frac, m[1], m[2]),
	}
	if m[1] == "none" {
		prose = append(prose, "No cell of the grid has a `fallback@T` that meets as many deadlines for no more money.")
	}
	flat := strings.Join(strings.Fields(readme), " ")
	for _, p := range prose {
		if !strings.Contains(flat, p) {
			t.Errorf("README.md does not say, as make figures' output has it:\n  %s", p)
		}
	}
}
