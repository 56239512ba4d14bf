package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// runBook is `policygen book [-policy FILE -class NAME | -config F -class
// NAME [-hour H] [-dir DIR]] < attempts.json`. stdin is capped
// (policy.MaxBookInput) and its read ends when ctx is done (SIGINT,
// SIGTERM), even while it blocks.
func (e *env) runBook(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("policygen book", flag.ContinueOnError)
	policyPath := fs.String("policy", "", "policy `file` to take the class's book from (with -class)")
	className := fs.String("class", "", "class `name` in the -policy file, or in the hour's file of -config")
	configPath := fs.String("config", "", "take the class's book from the hour's policy file in policy.out of this `config`, and answer with the lane and its endpoint (with -class)")
	hourFlag := fs.String("hour", "", "with -config: hour `YYYY-MM-DDTHH` in the config's timezone (default: the current hour)")
	dirFlag := fs.String("dir", "", "with -config: folder of the policy files (default: policy.out of the config)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: policygen book [-policy FILE -class NAME] < attempts.json
       policygen book -config F -class NAME [-hour YYYY-MM-DDTHH] [-dir DIR] < attempts.json

Reads {"attempts": [...], "policy": {...}} on stdin, or with -policy and
-class {"attempts": [...]} and the class's book from the policy file, and
prints the retry ledger's answer as one line of JSON.

With -config the book is the class's in the hour's policy file (as
policygen lane reads it: policy.out of the config, or -dir), and the answer
ends with "lane", the lane the action runs on (the book's free lane for
retry_free and wait, its paid lane for cut_over, null for stop), and
"endpoint", that lane's {"lane", "kind", "api", "base_url", "model",
"api_key_env"} from the config (the name of the key's variable, never a
key) or null: what POST /api/v1/book answers.

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
	case *policyPath != "" && *configPath != "":
		return usagef("book: -policy and -config exclude each other")
	case *configPath == "" && (*hourFlag != "" || *dirFlag != ""):
		return usagef("book: -hour and -dir go with -config")
	case *configPath != "" && *className == "":
		return usagef("book: -config goes with -class")
	case *configPath == "" && (*policyPath == "") != (*className == ""):
		return usagef("book: -policy and -class go together")
	}
	var fromFile *policy.BookPolicy
	var cut *policy.Cutover // the class's cut-over in the policy file
	var lanes []api.Lane    // with -config: the configured lanes
	if *configPath != "" {
		f, eps, err := e.bookFile(ctx, *configPath, *hourFlag, *dirFlag)
		if err != nil {
			return err
		}
		b, err := f.Book(*className)
		if err != nil {
			return fmt.Errorf("book: %w", err)
		}
		fromFile, lanes = &b, eps
		c, _ := f.Class(*className) // f.Book found it
		cut = c.Cutover
	}
	if *policyPath != "" {
		f, _, err := api.ReadFile(*policyPath)
		if err != nil {
			return err
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
	data, err := readInput(ctx, e.stdin, policy.MaxBookInput)
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
	var out []byte
	if lanes != nil {
		// The same bytes as POST /api/v1/book.
		out, err = api.AnswerWithLane(in, in.Policy, cut, lanes)
		var unknown *api.UnknownLaneError
		if errors.As(err, &unknown) {
			return fmt.Errorf("book: lane %q of class %q is not in the config %s", unknown.Lane, *className, *configPath)
		}
	} else {
		out, err = api.Answer(in, in.Policy, cut)
	}
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(out)
	return err
}

// bookFile reads the policy file of the hour (hourFlag, default the
// current hour, in the config's timezone) from policy.out of the config at
// configPath or from dirFlag, as policygen lane does, and returns it with
// the config's lanes.
func (e *env) bookFile(ctx context.Context, configPath, hourFlag, dirFlag string) (policy.File, []api.Lane, error) {
	cfg, err := config.Load(configPath)
	if err != nil {
		return policy.File{}, nil, err
	}
	f, _, err := e.hourFile("book", cfg, configPath, hourFlag, dirFlag)
	return f, cfg.APIOptions().Lanes, err
}

// hourFile reads and checks the policy file of the hour (hourFlag, default
// the current one) in policy.out of the config at configPath, or in dir,
// for the subcommand cmd (lane, book), and returns it with its path. A
// missing file's error says how to write it.
func (e *env) hourFile(cmd string, cfg *config.Config, configPath, hourFlag, dir string) (policy.File, string, error) {
	h, err := e.hourArg(hourFlag, cfg.Location)
	if err != nil {
		return policy.File{}, "", usagef("%s: -hour: %w", cmd, err)
	}
	folder := cfg.APIOptions().Folder
	if dir != "" {
		if folder.Dir, err = filepath.Abs(dir); err != nil {
			return policy.File{}, "", usagef("%s: -dir: %w", cmd, err)
		}
	}
	label := store.HourLabel(h, cfg.Location)
	f, _, err := folder.Read(label)
	var missing *api.NoFileError
	if errors.As(err, &missing) {
		how := "policygen -config " + configPath
		if hourFlag != "" {
			how += " -hour " + label
		}
		return f, folder.Path(label), fmt.Errorf("%s: %v (%s writes it)", cmd, missing, how)
	}
	if err != nil {
		return f, folder.Path(label), fmt.Errorf("%s: %w", cmd, err)
	}
	return f, folder.Path(label), nil
}
