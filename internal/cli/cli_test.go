package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		wantErr  string
		wantHelp bool
	}{
		{"ok", []string{"-n", "3"}, "", false},
		{"unknown flag", []string{"-bogus"}, "flag provided but not defined: -bogus (-h for usage)", false},
		{"bad value", []string{"-n", "x"}, `invalid value "x" for flag -n`, false},
		{"help", []string{"-h"}, flag.ErrHelp.Error(), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.Int("n", 0, "a number")
			fs.Usage = func() { _, _ = fs.Output().Write([]byte("usage: x [-n N]\n")) }
			var help bytes.Buffer
			err := Parse(fs, c.args, &help)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
			if c.wantHelp != (help.Len() > 0) {
				t.Errorf("help printed = %q", help.String())
			}
			if c.wantHelp && !errors.Is(err, flag.ErrHelp) {
				t.Errorf("-h should return flag.ErrHelp")
			}
		})
	}
}

func TestExit(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code int
		line string
	}{
		{"done", nil, 0, ""},
		{"help", flag.ErrHelp, 0, ""},
		{"usage", Usagef("-config is required"), 2, "x: -config is required\n"},
		{"wrapped usage", fmt.Errorf("swings: %w", Usagef("bad -days")), 2, "x: swings: bad -days\n"},
		{"bad input", errors.New("lanes[0].kind: want free or paid\nsecond line"), 1, "x: lanes[0].kind: want free or paid second line\n"},
		{"no lane", NoLanef("no lane fits class %q", "batch"), 3, "x: no lane fits class \"batch\"\n"},
		{"wrapped no lane", fmt.Errorf("lane: %w", NoLanef("none")), 3, "x: lane: none\n"},
		{"exit code 4", ExitError{Code: 4, Err: errors.New("four")}, 4, "x: four\n"},
		{"exit code 0 is still an error", ExitError{Code: 0, Err: errors.New("zero")}, 1, "x: zero\n"},
		{"exit code 2 is kept for usage", ExitError{Code: 2, Err: errors.New("two")}, 1, "x: two\n"},
		{"exit code out of range", ExitError{Code: 300, Err: errors.New("big")}, 1, "x: big\n"},
		{"usage wins over an exit code", ExitError{Code: 3, Err: Usagef("bad flag")}, 2, "x: bad flag\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if code := Exit("x", c.err, &b); code != c.code || b.String() != c.line {
				t.Errorf("Exit = %d %q, want %d %q", code, b.String(), c.code, c.line)
			}
		})
	}
}
