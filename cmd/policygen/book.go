package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

const bookUsage = `usage: policygen book [-policy FILE -class NAME] < attempts.json
       policygen book -config F -class NAME [-hour YYYY-MM-DDTHH] [-dir DIR] < attempts.json

Reads {"attempts": [...], "policy": {...}} on stdin, or with -policy and
-class {"attempts": [...]} and the class's book from the policy file, and
prints the retry ledger's answer as one line of JSON (docs/ledger.md).
With -config the book is the class's in the hour's policy file (as
policygen lane reads it), and the answer ends with "lane" and "endpoint",
the lane the action runs on: what POST /api/v1/book answers. With
"running_s": S beside the attempts it answers {"action": "wait" |
"cut_over", "why", "elapsed_s"} from the class's cut-over.
`

// runBook is `policygen book`. stdin is capped (policy.MaxBookInput) and
// its read ends when ctx is done (SIGINT, SIGTERM), even while it blocks.
func (e *env) runBook(ctx context.Context, args []string) error {
	fs := newFlags("book", bookUsage) // -config is optional here
	fs.Lookup("config").Usage = "take the class's book from the hour's policy file in policy.out of this `config`, and answer with the lane and its endpoint (with -class)"
	configPath := fs.Config
	policyPath := fs.String("policy", "", "policy `file` to take the class's book from (with -class)")
	className := fs.String("class", "", "class `name` in the -policy file, or in the hour's file of -config")
	hourFlag := fs.String("hour", "", "with -config: hour `YYYY-MM-DDTHH` in the config's timezone (default: the current hour)")
	dirFlag := fs.String("dir", "", "with -config: folder of the policy files (default: policy.out of the config)")
	if err := cli.Parse(fs.FlagSet, args, e.stderr); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return cli.Usagef("book: unexpected argument %q (the input comes on stdin)", fs.Arg(0))
	case *policyPath != "" && *configPath != "":
		return cli.Usagef("book: -policy and -config exclude each other")
	case *configPath == "" && (*hourFlag != "" || *dirFlag != ""):
		return cli.Usagef("book: -hour and -dir go with -config")
	case *configPath != "" && *className == "":
		return cli.Usagef("book: -config goes with -class")
	case *configPath == "" && (*policyPath == "") != (*className == ""):
		return cli.Usagef("book: -policy and -class go together")
	}
	var file *policy.File // the file the book comes from, if any
	var where string      // what its errors start with
	var lanes []api.Lane  // with -config: the configured lanes
	switch {
	case *configPath != "":
		cfg, err := config.Load(*configPath)
		if err != nil {
			return err
		}
		f, _, err := e.hourFile("book", cfg, *configPath, *hourFlag, *dirFlag)
		if err != nil {
			return err
		}
		file, where, lanes = &f, "book", cfg.APIOptions().Lanes
	case *policyPath != "":
		f, _, err := api.ReadFile(*policyPath)
		if err != nil {
			return err
		}
		file, where = &f, *policyPath
	}
	var fromFile *policy.BookPolicy
	var cut *policy.Cutover // the class's cut-over in the file
	if file != nil {
		// ParseFile holds the book to the same bounds as stdin's.
		c, err := file.NamedClass(*className)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		fromFile, cut = &c.Book, c.Cutover
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
		out, _, err = policy.Answer(in, in.Policy, cut)
	}
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(out)
	return err
}

// folderOf is the folder of the policy files: policy.out of cfg, or -dir.
func folderOf(cfg *config.Config, cmd, dir string) (api.Folder, error) {
	folder := cfg.APIOptions().Folder
	if dir != "" {
		var err error
		if folder.Dir, err = filepath.Abs(dir); err != nil {
			return folder, cli.Usagef("%s: -dir: %w", cmd, err)
		}
	}
	return folder, nil
}

// hourFile reads the policy file of the hour (-hour, default the current
// one) in folderOf for cmd, and its path; a missing one's error says how
// to write it.
func (e *env) hourFile(cmd string, cfg *config.Config, configPath, hourFlag, dir string) (policy.File, string, error) {
	h, err := e.hourArg(hourFlag, cfg.Location)
	if err != nil {
		return policy.File{}, "", cli.Usagef("%s: -hour: %w", cmd, err)
	}
	folder, err := folderOf(cfg, cmd, dir)
	if err != nil {
		return policy.File{}, "", err
	}
	label := store.HourLabel(h, cfg.Location)
	f, _, err := folder.Read(label)
	var missing *api.NoFileError
	if errors.As(err, &missing) {
		how := "policygen -config " + configPath
		if hourFlag != "" {
			how += " -hour " + label
		}
		err = fmt.Errorf("%v (%s writes it)", missing, how)
	}
	if err != nil {
		return f, "", fmt.Errorf("%s: %w", cmd, err)
	}
	return f, folder.Path(label), nil
}
