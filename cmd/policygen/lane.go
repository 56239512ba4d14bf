package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/cli"
)

const laneUsage = `usage: policygen lane -config F -class NAME [-hour YYYY-MM-DDTHH] [-format name|json|env|dotenv] [-dir DIR]
       policygen lane -config F -class NAME -next [-format name|json|env|dotenv] [-dir DIR]

Prints the lane a job of class NAME should run on: where the class's
decision starts it (a calibrated file: the book's free lane when
free_first, else the first of the class's lanes), in the policy file of
the hour (default: the current hour in the config's timezone), read from
policy.out of the config (or -dir). The endpoint comes from the config; no
API key is ever read or printed, only the name of the variable that holds
it.

  name    the lane's name and a newline
  json    one line: {"lane", "kind", "api", "base_url", "model", "api_key_env",
          "hour", "class", "cutover_after_s", "fallback"} ("" for a lane
          without api_key_env), what /api/v1/lane answers: cutover_after_s
          the first-token wait (seconds since the job's start) after which
          the free attempt is abandoned for the fallback, null when there is
          none (a policy of rule max, a paid lane, no fallback); fallback
          the class's eligible paid lane {"lane", "kind", "api", "base_url",
          "model", "api_key_env"} or null. When the class's free_first is
          false this hour the lane is the fallback itself.
  env     lines export NAME=VALUE for eval or source (a child process sees
          them): LANEWATCH_LANE, LANEWATCH_KIND, LANEWATCH_API,
          LANEWATCH_BASE_URL, LANEWATCH_MODEL, LANEWATCH_API_KEY_ENV,
          LANEWATCH_HOUR, LANEWATCH_CLASS, LANEWATCH_CUTOVER_AFTER_S,
          LANEWATCH_FALLBACK_LANE, LANEWATCH_FALLBACK_API,
          LANEWATCH_FALLBACK_BASE_URL, LANEWATCH_FALLBACK_MODEL,
          LANEWATCH_FALLBACK_API_KEY_ENV (each "" when there is none).
  dotenv  the same lines without "export", for >> $GITHUB_ENV or a GitLab
          dotenv report.
        A value made only of A-Z a-z 0-9 and _ - . / : @ % + , = is written
        bare (so $GITHUB_ENV reads it as is); any other value is single-quoted
        for sh ('\'' for a quote), which eval and source undo but $GITHUB_ENV
        would keep: use -format json there. Control characters are refused.

With -next it prints the first hour from the current one whose policy
file (live or forecast: policygen -day writes them) starts a job of the
class on a lane (it lists one, or its decision starts free): name prints the hour YYYY-MM-DDTHH; json one line {"class", "hour",
"start", "basis", "lanes"}; env and dotenv LANEWATCH_NEXT_HOUR,
LANEWATCH_NEXT_START, LANEWATCH_CLASS. Exit 3 when no file from this hour on
lets it fit, 1 when there are none.

Exit status: 0 a lane printed; 3 no lane fits the class this hour (nothing
on stdout, one line on stderr saying why per lane); 1 no policy file for the
hour, a class or lane that is not there, or a bad file; 2 bad usage.

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
		return fset.usagef("-class is required")
	}
	if _, err := choose(fset, "format", *format, option[bool]{"name", true}, option[bool]{"json", true}, option[bool]{"env", true}, option[bool]{"dotenv", true}); err != nil {
		return err
	}
	if *next && *hourFlag != "" {
		return fset.usagef("-next and -hour exclude each other")
	}
	cfg, err := config.Load(*fset.config)
	if err != nil {
		return err
	}
	if *next {
		folder := cfg.APIOptions().Folder
		if *dirFlag != "" {
			if folder.Dir, err = filepath.Abs(*dirFlag); err != nil {
				return fset.usagef("-dir: %w", err)
			}
		}
		return e.laneNext(folder, *className, *format)
	}
	f, path, err := e.hourFile("lane", cfg, *fset.config, *hourFlag, *dirFlag)
	if err != nil {
		return err
	}
	ch, err := api.Choose(f, *className, cfg.APIOptions().Lanes)
	var noLane *api.NoLaneError
	var unknown *api.UnknownLaneError
	switch {
	case errors.As(err, &noLane):
		return cli.NoLanef("lane: %v", noLane)
	case errors.As(err, &unknown):
		return fmt.Errorf("lane: %s: lane %q of class %q is not in the config %s", path, unknown.Lane, unknown.Class, *fset.config)
	case err != nil:
		return fmt.Errorf("lane: %s: %w", path, err)
	}
	out, err := laneOutput(*format, ch)
	if err != nil {
		return fmt.Errorf("lane: %w", err)
	}
	_, err = e.stdout.Write(out)
	return err
}

// laneOutput renders the chosen lane in format: json is api.Choice, the
// /api/v1/lane answer, key for key. It sees the lanes' endpoints, which
// hold the names of the keys' variables and never a key.
func laneOutput(format string, ch api.Choice) ([]byte, error) {
	l := ch.Lane
	switch format {
	case "json":
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ch); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case "env", "dotenv":
		var cut string
		if ch.CutoverAfterS != nil {
			cut = strconv.FormatFloat(*ch.CutoverAfterS, 'f', -1, 64)
		}
		var fb api.Lane
		if ch.Fallback != nil {
			fb = *ch.Fallback
		}
		return envLines(format == "env", "lane "+strconv.Quote(l.Lane), [][2]string{
			{"LANEWATCH_LANE", l.Lane}, {"LANEWATCH_KIND", l.Kind}, {"LANEWATCH_API", l.API},
			{"LANEWATCH_BASE_URL", l.BaseURL}, {"LANEWATCH_MODEL", l.Model},
			{"LANEWATCH_API_KEY_ENV", l.APIKeyEnv}, {"LANEWATCH_HOUR", ch.Hour}, {"LANEWATCH_CLASS", ch.Class},
			{"LANEWATCH_CUTOVER_AFTER_S", cut},
			{"LANEWATCH_FALLBACK_LANE", fb.Lane}, {"LANEWATCH_FALLBACK_API", fb.API},
			{"LANEWATCH_FALLBACK_BASE_URL", fb.BaseURL}, {"LANEWATCH_FALLBACK_MODEL", fb.Model},
			{"LANEWATCH_FALLBACK_API_KEY_ENV", fb.APIKeyEnv},
		})
	}
	return []byte(l.Lane + "\n"), nil
}

// envLines writes NAME=VALUE lines, each after "export " when export is
// set (-format env, for eval and source: a child process sees them), bare
// for -format dotenv ($GITHUB_ENV, GitLab's dotenv reports). what names
// the answer in an error.
func envLines(export bool, what string, kvs [][2]string) ([]byte, error) {
	var b bytes.Buffer
	for _, kv := range kvs {
		q, err := shellValue(kv[1])
		if err != nil {
			return nil, fmt.Errorf("%s of %s: %w (use -format json)", kv[0], what, err)
		}
		if export {
			b.WriteString("export ")
		}
		b.WriteString(kv[0] + "=" + q + "\n")
	}
	return b.Bytes(), nil
}

// shellValue returns s as the value of a sh assignment: bare when every
// byte is in [A-Za-z0-9_./:@%+,=-] (nothing sh expands, and what $GITHUB_ENV
// reads as is), else single-quoted, each quote in s closing the quotes,
// escaped with a backslash and reopening them. A control
// character (a newline would start a new variable in $GITHUB_ENV) is an
// error.
func shellValue(s string) (string, error) {
	bare := true
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return "", errors.New("holds a control character")
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("_./:@%+,=-", r):
		default:
			bare = false
		}
	}
	if bare {
		return s, nil
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'", nil
}

// laneNext is `policygen lane -next`: api.Folder.Next from the current hour.
func (e *env) laneNext(d api.Folder, class, format string) error {
	n, err := d.Next(e.now(), class)
	var none *api.NoNextError
	switch {
	case errors.As(err, &none) && none.Files > 0:
		return cli.NoLanef("lane: %v", none)
	case err != nil:
		return fmt.Errorf("lane: %s: %w", d.Dir, err)
	}
	var out []byte
	switch format {
	case "json":
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(n); err != nil {
			return fmt.Errorf("lane: %w", err)
		}
		out = b.Bytes()
	case "env", "dotenv":
		if out, err = envLines(format == "env", "the next hour", [][2]string{
			{"LANEWATCH_NEXT_HOUR", n.Hour}, {"LANEWATCH_NEXT_START", n.Start}, {"LANEWATCH_CLASS", n.Class},
		}); err != nil {
			return fmt.Errorf("lane: %w", err)
		}
	default:
		out = []byte(n.Hour + "\n")
	}
	_, err = e.stdout.Write(out)
	return err
}
