package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
)

const laneUsage = `usage: policygen lane -config F -class NAME [-hour YYYY-MM-DDTHH] [-format name|json|env|dotenv] [-dir DIR]
       policygen lane -config F -class NAME -next [-format name|json|env|dotenv] [-dir DIR]

Prints the lane a job of class NAME should run on (where the class's
decision starts it, else its first lane) in the policy file of the hour
(default: the current one) in policy.out of the config (or -dir), with its
endpoint from the config: the name of the key's variable, never a key.
-format json is what /api/v1/lane answers (docs/api.md); env prints export
NAME=VALUE lines for eval or source (LANEWATCH_LANE, ..., docs/deploy.md),
dotenv the same without "export", for >> $GITHUB_ENV; a value outside
A-Z a-z 0-9 and _ - . / : @ % + , = is single-quoted for sh (use json
where that would be kept), a control character refused.

With -next it prints the first hour from the current one whose policy file
(live or forecast: policygen -day writes them) starts a job of the class
on a lane: name the hour; json {"class", "hour", "start", "basis",
"lanes"}; env and dotenv LANEWATCH_NEXT_HOUR, LANEWATCH_NEXT_START,
LANEWATCH_CLASS.

Exit status: 0 printed; 3 no lane fits the class this hour (why per lane
on stderr), or with -next in no file from this hour on; 1 no policy file,
a class or lane that is not there, a bad file; 2 bad usage.

`

// runLane is `policygen lane`.
func (e *env) runLane(ctx context.Context, args []string) error {
	fset := newFlags("lane", laneUsage)
	className := fset.String("class", "", "job class `NAME` (required)")
	hourFlag := fset.String("hour", "", "hour `YYYY-MM-DDTHH` in the config's timezone (default: the current hour)")
	format := fset.String("format", "name", "output `format`: name, json, env or dotenv")
	dirFlag := fset.String("dir", "", "folder of the policy files (default: policy.out of the config)")
	next := fset.Bool("next", false, "print the first hour from now on that the class fits in, instead of a lane")
	if err := fset.parse(args, e.stderr, ""); err != nil {
		return err
	}
	if *className == "" {
		return fset.Usagef("-class is required")
	}
	if _, err := choose(fset, "format", *format, option[bool]{"name", true}, option[bool]{"json", true}, option[bool]{"env", true}, option[bool]{"dotenv", true}); err != nil {
		return err
	}
	if *next && *hourFlag != "" {
		return fset.Usagef("-next and -hour exclude each other")
	}
	cfg, err := config.Load(*fset.Config)
	if err != nil {
		return err
	}
	var out []byte
	if *next {
		out, err = e.laneNext(cfg, *className, *format, *dirFlag)
	} else {
		out, err = e.laneChoice(cfg, *fset.Config, *className, *format, *hourFlag, *dirFlag)
	}
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(out)
	return err
}

// laneNext is `policygen lane -next`.
func (e *env) laneNext(cfg *config.Config, class, format, dir string) ([]byte, error) {
	folder, err := folderOf(cfg, "lane", dir)
	if err != nil {
		return nil, err
	}
	n, err := folder.Next(e.now(), class)
	var none *api.NoNextError
	switch {
	case errors.As(err, &none) && none.Files > 0:
		return nil, cli.NoLanef("lane: %v", none)
	case err != nil:
		return nil, fmt.Errorf("lane: %s: %w", folder.Dir, err)
	}
	return output(format, n, n.Hour, "the next hour", [][2]string{
		{"LANEWATCH_NEXT_HOUR", n.Hour}, {"LANEWATCH_NEXT_START", n.Start}, {"LANEWATCH_CLASS", n.Class}})
}

// laneChoice is `policygen lane` without -next.
func (e *env) laneChoice(cfg *config.Config, configPath, class, format, hourFlag, dir string) ([]byte, error) {
	f, path, err := e.hourFile("lane", cfg, configPath, hourFlag, dir)
	if err != nil {
		return nil, err
	}
	ch, err := api.Choose(f, class, cfg.APIOptions().Lanes)
	var noLane *api.NoLaneError
	var unknown *api.UnknownLaneError
	switch {
	case errors.As(err, &noLane):
		return nil, cli.NoLanef("lane: %v", noLane)
	case errors.As(err, &unknown):
		return nil, fmt.Errorf("lane: %s: lane %q of class %q is not in the config %s", path, unknown.Lane, unknown.Class, configPath)
	case err != nil:
		return nil, fmt.Errorf("lane: %s: %w", path, err)
	}
	var cut string
	if ch.CutoverAfterS != nil {
		cut = strconv.FormatFloat(*ch.CutoverAfterS, 'f', -1, 64)
	}
	l, fb := ch.Lane, api.Lane{}
	if ch.Fallback != nil {
		fb = *ch.Fallback
	}
	return output(format, ch, l.Lane, "lane "+strconv.Quote(l.Lane), [][2]string{
		{"LANEWATCH_LANE", l.Lane}, {"LANEWATCH_KIND", l.Kind}, {"LANEWATCH_API", l.API},
		{"LANEWATCH_BASE_URL", l.BaseURL}, {"LANEWATCH_MODEL", l.Model},
		{"LANEWATCH_API_KEY_ENV", l.APIKeyEnv}, {"LANEWATCH_HOUR", ch.Hour}, {"LANEWATCH_CLASS", ch.Class},
		{"LANEWATCH_CUTOVER_AFTER_S", cut},
		{"LANEWATCH_FALLBACK_LANE", fb.Lane}, {"LANEWATCH_FALLBACK_API", fb.API},
		{"LANEWATCH_FALLBACK_BASE_URL", fb.BaseURL}, {"LANEWATCH_FALLBACK_MODEL", fb.Model},
		{"LANEWATCH_FALLBACK_API_KEY_ENV", fb.APIKeyEnv}})
}

// output renders an answer in format: json as the API answers (api.JSON),
// name a line, env and dotenv the NAME=VALUE lines of vars ("export " first
// for env); what names the answer in an error.
func output(format string, v any, name, what string, vars [][2]string) ([]byte, error) {
	switch format {
	case "json":
		return api.JSON(v), nil
	case "env", "dotenv":
		var b strings.Builder
		for _, kv := range vars {
			q, err := shellValue(kv[1])
			if err != nil {
				return nil, fmt.Errorf("lane: %s of %s: %w (use -format json)", kv[0], what, err)
			}
			if format == "env" {
				b.WriteString("export ")
			}
			b.WriteString(kv[0] + "=" + q + "\n")
		}
		return []byte(b.String()), nil
	}
	return []byte(name + "\n"), nil
}

// shellValue returns s as the value of a sh assignment: bare when every
// byte is in [A-Za-z0-9_./:@%+,=-] (nothing sh expands, and what $GITHUB_ENV
// reads as is), else single-quoted, each quote in s closing the quotes,
// escaped and reopening them. A control character (a newline would start
// a new variable in $GITHUB_ENV) is an error.
func shellValue(s string) (string, error) {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
		return "", errors.New("holds a control character")
	}
	if strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:@%+,=-", r))
	}) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'", nil
	}
	return s, nil
}
