package missingtool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMessage(t *testing.T) {
	for _, c := range []struct{ tool, install, why, want string }{
		{"rsvg-convert", "apt-get install librsvg2-bin", "", "missing tool: rsvg-convert (install: apt-get install librsvg2-bin)"},
		{"node", "", "not on PATH", "missing tool: node: not on PATH"},
		{"influxd", "scripts/influxd.sh build", "/x/influxd: no such file", "missing tool: influxd (install: scripts/influxd.sh build): /x/influxd: no such file"},
	} {
		if got := Message(c.tool, c.install, c.why); got != c.want || !strings.HasPrefix(got, Prefix) {
			t.Errorf("Message(%q, %q, %q) = %q, want %q", c.tool, c.install, c.why, got, c.want)
		}
	}
}

func TestCI(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{{"", false}, {"false", false}, {"0", false}, {"true", true}, {"1", true}, {"yes", true}} {
		t.Setenv("CI", c.v)
		if got := CI(); got != c.want {
			t.Errorf("CI=%q: CI() = %v, want %v", c.v, got, c.want)
		}
	}
}

// Skip logs to $LANEWATCH_SKIPLOG and skips outside CI.
func TestSkipLogsAndSkips(t *testing.T) {
	log := filepath.Join(t.TempDir(), "skips")
	t.Setenv(LogEnv, log)
	t.Setenv("CI", "")
	t.Run("inner", func(t *testing.T) {
		Skip(t, "frobnicator", "apt-get install frob", "")
		t.Error("Skip returned")
	})
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "TestSkipLogsAndSkips/inner: missing tool: frobnicator (install: apt-get install frob)\n"; string(data) != want {
		t.Errorf("skip log %q, want %q", data, want)
	}
}

// fakeTB records what Skip asked of it; its Fatalf and Skip return.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Name() string                   { return "TestFake" }
func (f *fakeTB) Fatalf(format string, a ...any) { f.fatal = format }
func (f *fakeTB) Skip(a ...any)                  { f.skip = "skipped" }

// Under CI a missing tool fails the test instead of skipping it.
func TestSkipFailsUnderCI(t *testing.T) {
	t.Setenv(LogEnv, "")
	for _, c := range []struct {
		ci        string
		wantFatal bool
	}{{"true", true}, {"", false}} {
		t.Setenv("CI", c.ci)
		f := &fakeTB{TB: t}
		Skip(f, "frobnicator", "", "")
		failed, skipped := f.fatal != "", f.skip != "" && f.fatal == ""
		if failed != c.wantFatal || skipped == c.wantFatal {
			t.Errorf("CI=%q: fatal %q skip %q, want fatal %v", c.ci, f.fatal, f.skip, c.wantFatal)
		}
	}
}
