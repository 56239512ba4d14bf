package main

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/lanewatch/lanewatch/internal/cli"
)

// Every command says a bad flag value the same way, naming the command.
func TestCmdFlags(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		args      []string
		want      string // "" for none
	}{
		{"ok", "swings", []string{"-config", "c.yaml"}, ""},
		{"missing config", "swings", nil, "swings: -config is required"},
		{"missing config, policy command", "", nil, "-config is required"},
		{"argument", "lane", []string{"-config", "c", "x"}, `lane: unexpected argument "x" (hint)`},
		{"argument with hint", "", []string{"-config", "c", "x"}, `unexpected argument "x" (hint)`},
		{"bad flag", "backtest", []string{"-nope"}, "backtest: flag provided but not defined: -nope (-h for usage)"},
		{"bad format", "backtest", []string{"-config", "c", "-format", "xml"}, `backtest: -format: want table, csv or json, got "xml"`},
		{"bad days", "swings", []string{"-config", "c", "-days", "0"}, "swings: -days: want 1 to 9, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFlags(tc.cmd, "usage\n")
			format := f.String("format", "table", "")
			days := f.Int("days", 1, "")
			err := f.parse(tc.args, &bytes.Buffer{}, " (hint)")
			if err == nil {
				_, err = choose(f, "format", *format, option[int]{"table", 1}, option[int]{"csv", 2}, option[int]{"json", 3})
			}
			if err == nil {
				err = f.inRange("days", *days, 1, 9)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			var ue cli.UsageError
			if err != nil && !errors.As(err, &ue) {
				t.Errorf("error %T is not a usage error (exit 2)", err)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		var out bytes.Buffer
		err := newFlags("lane", "usage: policygen lane\n").parse([]string{"-h"}, &out, "")
		if !errors.Is(err, flag.ErrHelp) || !bytes.HasPrefix(out.Bytes(), []byte("usage: policygen lane\n  -config")) {
			t.Fatalf("err %v, help %q", err, out.String())
		}
	})
}
