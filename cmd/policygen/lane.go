package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/hours"
	"github.com/lanewatch/lanewatch/internal/cli"
	"github.com/lanewatch/lanewatch/policy"
)

const laneUsage = `usage: policygen lane -config F -class NAME [-hour YYYY-MM-DDTHH] [-format name|json|env] [-dir DIR]

Prints the lane a job of class NAME should run on: the first lane of the
class's lanes in the policy file of the hour (default: the current hour in
the config's timezone), read from policy.out of the config (or -dir). The
endpoint comes from the config; no API key is ever read or printed, only the
name of the variable that holds it.

  name  the lane's name and a newline
  json  one line: {"lane", "kind", "api", "base_url", "model", "api_key_env",
        "hour", "class"} ("" for a lane without api_key_env)
  env   lines NAME=VALUE for eval, source or >> $GITHUB_ENV:
        LANEWATCH_LANE, LANEWATCH_KIND, LANEWATCH_API, LANEWATCH_BASE_URL,
        LANEWATCH_MODEL, LANEWATCH_API_KEY_ENV, LANEWATCH_HOUR, LANEWATCH_CLASS.
        A value made only of A-Z a-z 0-9 and _ - . / : @ % + , = is written
        bare (so $GITHUB_ENV reads it as is); any other value is single-quoted
        for sh ('\'' for a quote), which eval and source undo but $GITHUB_ENV
        would keep: use -format json there. Control characters are refused.

Exit status: 0 a lane printed; 3 no lane fits the class this hour (nothing
on stdout, one line on stderr saying why per lane); 1 no policy file for the
hour, a class or lane that is not there, or a bad file; 2 bad usage.

`

// runLane is `policygen lane`.
func (e *env) runLane(ctx context.Context, args []string) error {
	fset := newFlags("lane", laneUsage)
	className := fset.String("class", "", "job class `NAME` (required)")
	hourFlag := fset.String("hour", "", "hour `YYYY-MM-DDTHH` in the config's timezone (default: the current hour)")
	format := fset.String("format", "name", "output `format`: name, json or env")
	dirFlag := fset.String("dir", "", "folder of the policy files (default: policy.out of the config)")
	if err := fset.parse(args, e.stderr, ""); err != nil {
		return err
	}
	if *className == "" {
		return fset.usagef("-class is required")
	}
	if _, err := choose(fset, "format", *format, option[bool]{"name", true}, option[bool]{"json", true}, option[bool]{"env", true}); err != nil {
		return err
	}
	configPath := fset.config
	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	loc := cfg.Location
	h, err := e.hourArg(*hourFlag, loc)
	if err != nil {
		return fset.usagef("-hour: %w", err)
	}
	label := hours.Label(h, loc)
	dir := cfg.Policy.Out
	if *dirFlag != "" {
		if dir, err = filepath.Abs(*dirFlag); err != nil {
			return fset.usagef("-dir: %w", err)
		}
	}

	path := filepath.Join(dir, label+".yaml")
	data, err := readFileCapped(ctx, "policy file "+path, path, maxPolicyFile)
	if errors.Is(err, fs.ErrNotExist) {
		how := "policygen -config " + *configPath
		if *hourFlag != "" {
			how += " -hour " + label
		}
		return fmt.Errorf("lane: no policy file for %s: %s does not exist (%s writes it)", label, path, how)
	}
	if err != nil {
		return fmt.Errorf("lane: %w", err)
	}
	f, err := policy.ParseFile(data)
	if err != nil {
		return fmt.Errorf("lane: %s: %w", path, err)
	}
	if f.Hour != label {
		return fmt.Errorf("lane: %s: holds hour %q, want %q", path, f.Hour, label)
	}
	c, err := f.NamedClass(*className)
	if err != nil {
		return fmt.Errorf("lane: %s: %w", path, err)
	}
	if len(c.Lanes) == 0 {
		return cli.NoLanef("lane: no lane fits class %q in %s: %s", c.Name, label, whyNoLane(f, c))
	}
	name := c.Lanes[0]
	var spec *config.Lane
	for i := range cfg.Lanes {
		if cfg.Lanes[i].Name == name {
			spec = &cfg.Lanes[i]
			break
		}
	}
	if spec == nil {
		return fmt.Errorf("lane: %s: lane %q of class %q is not in the config %s", path, name, c.Name, *configPath)
	}
	out, err := laneOutput(*format, spec, label, c.Name)
	if err != nil {
		return fmt.Errorf("lane: %w", err)
	}
	_, err = e.stdout.Write(out)
	return err
}

// whyNoLane says, per lane of the file, why it is not in the class's lanes:
// "free: probe_failed; paid: does not fit the 60 s deadline (55 s queue +
// 19.28 s to generate 800 tokens)".
func whyNoLane(f policy.File, c policy.Class) string {
	if len(f.Lanes) == 0 {
		return "the policy file lists no lanes"
	}
	parts := make([]string, len(f.Lanes))
	for i, l := range f.Lanes {
		why := "not listed for the class"
		switch {
		case !l.Eligible:
			why = l.Reason
		case l.Samples <= 0:
			why = "no samples"
		default:
			gen, ok := policy.NextGenS(l.TokPerS, c.EstTokens)
			switch {
			case !ok:
				why = "no decode rate measured"
			case l.NextQueueS+gen > c.DeadlineS:
				why = fmt.Sprintf("does not fit the %s s deadline (%s s queue + %s s to generate %d tokens)",
					secs2(c.DeadlineS), secs2(l.NextQueueS), secs2(gen), c.EstTokens)
			}
		}
		parts[i] = l.Name + ": " + why
	}
	return strings.Join(parts, "; ")
}

// secs2 writes seconds with at most 2 decimals and no trailing zeros.
func secs2(x float64) string { return strconv.FormatFloat(policy.Round(x, 2), 'f', -1, 64) }

// laneJSON is one line of `policygen lane -format json`.
type laneJSON struct {
	Lane      string `json:"lane"`
	Kind      string `json:"kind"`
	API       string `json:"api"`
	BaseURL   string `json:"base_url"`
	Model     string `json:"model"`
	APIKeyEnv string `json:"api_key_env"`
	Hour      string `json:"hour"`
	Class     string `json:"class"`
}

// laneOutput renders the chosen lane in format. It sees the config's lane,
// which holds the name of the key's variable and never a key.
func laneOutput(format string, l *config.Lane, hour, class string) ([]byte, error) {
	v := laneJSON{Lane: l.Name, Kind: l.Kind, API: l.API, BaseURL: l.BaseURL, Model: l.Model, APIKeyEnv: l.APIKeyEnv, Hour: hour, Class: class}
	switch format {
	case "json":
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case "env":
		var b bytes.Buffer
		for _, kv := range [][2]string{
			{"LANEWATCH_LANE", v.Lane}, {"LANEWATCH_KIND", v.Kind}, {"LANEWATCH_API", v.API},
			{"LANEWATCH_BASE_URL", v.BaseURL}, {"LANEWATCH_MODEL", v.Model},
			{"LANEWATCH_API_KEY_ENV", v.APIKeyEnv}, {"LANEWATCH_HOUR", v.Hour}, {"LANEWATCH_CLASS", v.Class},
		} {
			q, err := shellValue(kv[1])
			if err != nil {
				return nil, fmt.Errorf("%s of lane %q: %w (use -format json)", kv[0], v.Lane, err)
			}
			b.WriteString(kv[0] + "=" + q + "\n")
		}
		return b.Bytes(), nil
	}
	return []byte(v.Lane + "\n"), nil
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
