package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lanewatch/lanewatch/internal/cli"
)

// cmdFlags is the flag set of one policygen command: -config, the usage
// text, the checks after parsing, one wording of errors.
type cmdFlags struct {
	*cli.Command
	name string // the subcommand ("swings"); "" for the policy command
}

// newFlags starts the flags of `policygen name`; -h prints usage, then the flags.
func newFlags(name, usage string) *cmdFlags {
	return &cmdFlags{cli.NewCommand("policygen", name, usage, "path to the lanewatch YAML config (required)"), name}
}

// parse parses args and refuses arguments (argHint follows the message) and a missing -config.
func (f *cmdFlags) parse(args []string, stderr io.Writer, argHint string) error {
	if err := cli.Parse(f.FlagSet, args, stderr); err != nil {
		if f.name == "" || errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%s: %w", f.name, err)
	}
	return f.Check(false, argHint)
}

// option is one value a flag may take and what it selects.
type option[T any] struct {
	name string
	v    T
}

// choose returns what got selects among opts, or "-flag: want a, b or c, got \"x\"".
func choose[T any](f *cmdFlags, flagName, got string, opts ...option[T]) (T, error) {
	names := make([]string, len(opts))
	for i, o := range opts {
		if o.name == got {
			return o.v, nil
		}
		names[i] = o.name
	}
	var zero T
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	return zero, f.Usagef("-%s: want %s, got %q", flagName, want, clip(got))
}

// inRange refuses an integer flag outside [lo, hi]: "-days: want 1 to 3660, got 0".
func (f *cmdFlags) inRange(flagName string, v, lo, hi int) error {
	if v < lo || v > hi {
		return f.Usagef("-%s: want %d to %d, got %d", flagName, lo, hi, v)
	}
	return nil
}
