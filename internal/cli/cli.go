// Package cli holds what every lanewatch command does the same way with its
// flags: a bad flag is one error line, -h prints the usage.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args with fs without letting the flag package print: a bad
// flag comes back as an error for the caller to print as its one line (and
// map to exit status 2); -h or -help prints fs.Usage to help and returns
// flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string, help io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(help)
		fs.Usage()
		return err
	}
	if err != nil {
		return fmt.Errorf("%w (-h for usage)", err)
	}
	return nil
}
