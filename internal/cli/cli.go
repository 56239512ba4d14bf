// Package cli holds what every lanewatch command does the same way: a bad
// flag or argument is one error line and exit status 2, any other error one
// line and exit status 1 (or the status an ExitError carries, such as
// NoLane), and -h prints the usage.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// UsageError marks bad flags or arguments: exit status 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}

// NoLane is the exit status of a command that ran fine but found no lane to
// use (policygen lane when no lane fits the class this hour): a state for a
// script to branch on, not a failure of the command.
const NoLane = 3

// ExitError is an error that asks for an exit status of its own. Codes
// 0, 1, 2 and anything outside 3..125 are exit status 1 (0 would hide the
// error; 2 is for usage errors; 126 and up mean things to the shell).
type ExitError struct {
	Code int
	Err  error
}

func (e ExitError) Error() string { return e.Err.Error() }
func (e ExitError) Unwrap() error { return e.Err }

// NoLanef returns an ExitError with status NoLane and a formatted message.
func NoLanef(format string, args ...any) error {
	return ExitError{Code: NoLane, Err: fmt.Errorf(format, args...)}
}

// Parse parses args with fs without letting the flag package print: a bad
// flag comes back as a UsageError for the caller to return; -h or -help
// prints fs.Usage to help and returns flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string, help io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(help)
		fs.Usage()
		return err
	}
	if err != nil {
		return UsageError{fmt.Errorf("%w (-h for usage)", err)}
	}
	return nil
}

// Exit prints err as one line, "name: err", and returns the exit status:
// 0 for nil or -h, 2 for a UsageError, an ExitError's code when it is in
// 3..125, 1 for anything else.
func Exit(name string, err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
	fmt.Fprintf(stderr, "%s: %s\n", name, msg)
	var ue UsageError
	if errors.As(err, &ue) {
		return 2
	}
	var ee ExitError
	if errors.As(err, &ee) && ee.Code >= 3 && ee.Code <= 125 {
		return ee.Code
	}
	return 1
}

// Warner returns a warning function (the Warn of the stores) that prints
// each warning as one line on w: "prog: warning: msg k="v" ...".
func Warner(prog string, w io.Writer) func(msg string, args ...any) {
	return func(msg string, args ...any) {
		var b strings.Builder
		b.WriteString(prog + ": warning: ")
		b.WriteString(msg)
		for i := 0; i+1 < len(args); i += 2 {
			fmt.Fprintf(&b, " %v=%q", args[i], fmt.Sprint(args[i+1]))
		}
		b.WriteByte('\n')
		_, _ = io.WriteString(w, b.String())
	}
}

// Command is the flag set of a command or of one of its subcommands, with
// the -config that Check requires.
type Command struct {
	*flag.FlagSet
	Config *string
	prefix string // of its usage errors: "import: ", or "" for the command itself
}

// NewCommand starts the flags of `prog name` (name "": of prog itself);
// -h prints usage, then the flags.
func NewCommand(prog, name, usage, configHelp string) *Command {
	fs := flag.NewFlagSet(strings.TrimSpace(prog+" "+name), flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	c := &Command{FlagSet: fs, Config: fs.String("config", "", configHelp)}
	if name != "" {
		c.prefix = name + ": "
	}
	return c
}

// Usagef is Usagef with the subcommand's name first: "import: ...".
func (c *Command) Usagef(format string, args ...any) error {
	return Usagef(c.prefix+format, args...)
}

// Check refuses, once c has parsed, an argument unless takesArgs (argHint
// follows the message) and a missing -config.
func (c *Command) Check(takesArgs bool, argHint string) error {
	switch {
	case !takesArgs && c.NArg() > 0:
		return c.Usagef("unexpected argument %q%s", c.Arg(0), argHint)
	case *c.Config == "":
		return c.Usagef("-config is required")
	}
	return nil
}
