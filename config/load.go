package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/lanewatch/lanewatch/internal/decode"
	"gopkg.in/yaml.v3"
)

// Load reads, parses and validates the file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg, err := Parse(bytes.NewReader(data), filepath.Dir(abs))
	var ce *Error
	if errors.As(err, &ce) { // every error of Parse is one
		ce.File = path
	}
	return cfg, err
}

// Parse reads a configuration from r; dir is the folder relative paths
// resolve against.
func Parse(r io.Reader, dir string) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &Error{Err: err}
	}
	doc, _, err := decode.YAML(data)
	if err != nil {
		return nil, quoteHint(data, err)
	}
	cfg := Default()
	lines, err := decode.Decode(doc, cfg)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if err := cfg.validate(); err != nil {
		var ce *Error
		if errors.As(err, &ce) && ce.Line == 0 {
			ce.Line = lines.Line(ce.Field)
		}
		return nil, err
	}
	return cfg, nil
}

// UnmarshalYAML reads a Go duration string such as "30s" or "2m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value) // a list or mapping has no Value: an error too
	if err != nil {
		return fmt.Errorf("want a duration such as \"30s\", got %s", decode.Describe(n))
	}
	*d = Duration(v)
	return nil
}

// unquotedStar is a schedule whose cron spec starts with *: YAML reads a
// leading * as an alias, so the spec must be quoted.
var unquotedStar = regexp.MustCompile(`(?m)^(\s*schedule:\s*)(\*[^"'#\n]*?)\s*$`)

// quoteHint says, for a YAML error caused by an unquoted cron spec, which
// line it is on and how to quote it.
func quoteHint(data []byte, err error) error {
	loc := unquotedStar.FindSubmatchIndex(data)
	if loc == nil {
		return err
	}
	line := bytes.Count(data[:loc[0]], []byte("\n")) + 1
	spec := string(data[loc[4]:loc[5]])
	return decode.Errorf(line, "schedule", "a cron spec that starts with * must be quoted (YAML reads * as an alias): schedule: %q", spec)
}
