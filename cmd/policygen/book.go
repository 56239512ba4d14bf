package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/internal/cli"

	"github.com/lanewatch/lanewatch/policy"
)

// runBook is `policygen book [-policy FILE -class NAME] < attempts.json`.
// Reads are capped (stdin maxBookInput, the file maxPolicyFile) and end when
// ctx is done (SIGINT, SIGTERM), even while stdin blocks.
func (e *env) runBook(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("policygen book", flag.ContinueOnError)
	policyPath := fs.String("policy", "", "policy `file` to take the class's book from (with -class)")
	className := fs.String("class", "", "class `name` in the -policy file")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: policygen book [-policy FILE -class NAME] < attempts.json

Reads {"attempts": [...], "policy": {...}} on stdin, or with -policy and
-class {"attempts": [...]} and the class's book from the policy file, and
prints the retry ledger's answer as one line of JSON.

With "running_s": S beside the attempts (an attempt is running and has no
first token after S seconds), it answers {"action": "wait" | "cut_over",
"why", "elapsed_s"} from the class's cut-over: cutover_after_s and
free_first of a calibrated policy file, or of the stdin policy.
`)
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, e.stderr); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("book: unexpected argument %q (the input comes on stdin)", fs.Arg(0))
	case (*policyPath == "") != (*className == ""):
		return usagef("book: -policy and -class go together")
	}
	var fromFile *policy.BookPolicy
	var cut *policy.Cutover // the class's cut-over in the -policy file
	if *policyPath != "" {
		data, err := readFileCapped(ctx, "policy file "+*policyPath, *policyPath, maxPolicyFile)
		if err != nil {
			return err
		}
		f, err := policy.ParseFile(data)
		if err != nil {
			return fmt.Errorf("%s: %w", *policyPath, err)
		}
		// ParseFile holds the book to the same bounds as stdin's.
		b, err := f.Book(*className)
		if err != nil {
			return fmt.Errorf("%s: %w", *policyPath, err)
		}
		fromFile = &b
		c, _ := f.Class(*className) // f.Book found it
		cut = c.Cutover
	}
	data, err := readCapped(ctx, "input", maxBookInput, func() (io.ReadCloser, error) { return io.NopCloser(e.stdin), nil })
	if err != nil {
		return err
	}
	in, err := policy.DecodeBookInput(data, fromFile == nil)
	if err != nil {
		return err
	}
	if fromFile != nil {
		in.Policy = *fromFile
	}
	// The same bytes as POST /api/v1/book.
	out, err := api.Answer(in, in.Policy, cut)
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(out)
	return err
}
