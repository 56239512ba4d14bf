// Package missingtool skips a test whose outside tool (Chromium,
// rsvg-convert, influxd, node, python3, systemd-analyze...) is not
// installed, the same way everywhere: the skip message starts with Prefix,
// so `go test -v` or `-json` output can be grepped for it; the skip is
// appended to the file $LANEWATCH_SKIPLOG names, so scripts/test.sh can
// list every skip in one summary; and under CI (CI set, and not "false" or
// "0") the test fails instead, since CI installs every tool.
package missingtool

import (
	"fmt"
	"os"
	"testing"
)

// Prefix starts every skip message of this package.
const Prefix = "missing tool: "

// LogEnv names the variable holding the file each skip is appended to.
const LogEnv = "LANEWATCH_SKIPLOG"

// Skip skips tb (or, under CI, fails it) because tool is missing; install
// says how to get it ("apt-get install librsvg2-bin"), why what the test
// wanted of it.
func Skip(tb testing.TB, tool, install, why string) {
	tb.Helper()
	msg := Message(tool, install, why)
	Log(tb.Name(), msg)
	if CI() {
		tb.Fatalf("%s (CI=%s: CI must install every tool)", msg, os.Getenv("CI"))
	}
	tb.Skip(msg)
}

// Message is the skip message: "missing tool: TOOL (install: HOW): WHY".
func Message(tool, install, why string) string {
	msg := Prefix + tool
	if install != "" {
		msg += " (install: " + install + ")"
	}
	if why != "" {
		msg += ": " + why
	}
	return msg
}

// CI reports whether the tests run under CI, where nothing may be skipped
// for a missing tool.
func CI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// Log appends "TEST: MSG" to the file $LANEWATCH_SKIPLOG names, if it does;
// one short write with O_APPEND, so test binaries running in parallel do
// not interleave their lines. It never fails the test.
func Log(test, msg string) {
	path := os.Getenv(LogEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s: %s\n", test, msg)
}
