package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults for the fields a file may leave out.
const (
	DefaultTimezone     = "UTC"
	DefaultSchedule     = "7,27,47 * * * *"
	DefaultJitter       = 30 * time.Second
	DefaultConcurrency  = 16
	DefaultStorePath    = "data/samples.lp"
	DefaultSpool        = "data/spool.lp"
	DefaultDeadLetter   = "data/dead-letter.lp"
	DefaultSpoolMax     = 64 << 20
	DefaultPrompt       = "Reply with the single word: ok"
	DefaultMaxTokens    = 16
	DefaultTimeout      = 120 * time.Second
	DefaultPolicyOut    = "policies"
	DefaultLookbackDays = 7
)

// Error is a configuration error tied to one field. Its text is
// "FILE: FIELD: PROBLEM" (or "FIELD: PROBLEM" without a file).
type Error struct {
	File  string
	Line  int // 0 when unknown
	Field string
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	// One line, whatever the YAML library quoted back.
	b.WriteString(strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(e.Err.Error()))
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Default returns a configuration with every default filled in and no lanes.
func Default() *Config {
	return &Config{
		Timezone:    DefaultTimezone,
		Schedule:    DefaultSchedule,
		Jitter:      Duration(DefaultJitter),
		Concurrency: DefaultConcurrency,
		Store:       Store{Kind: "file", Path: DefaultStorePath, Bucket: "lanewatch/autogen"},
		Probe: Probe{
			Prompt:    DefaultPrompt,
			MaxTokens: DefaultMaxTokens,
			Timeout:   Duration(DefaultTimeout),
		},
		Policy: Policy{Out: DefaultPolicyOut, LookbackDays: DefaultLookbackDays},
	}
}

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
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = path
			return nil, ce
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// Parse reads a configuration from r; dir is the folder relative paths
// resolve against.
func Parse(r io.Reader, dir string) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, decodeError(data, err)
	}
	cfg.Dir = dir
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decodeError explains err, which decoding data into a Config returned, as
// one line naming the field at fault. yaml.v3 reports only a line, and one
// line may hold several fields ("- {name: a, modle: x}"), so the document is
// walked again, field by field, to find the first value yaml.v3 rejects.
// When the walk finds nothing (a syntax error, say) err is reported as yaml.v3
// put it, with its line.
func decodeError(data []byte, err error) error {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil {
		w := walker{budget: 100000, active: map[*yaml.Node]bool{}}
		if e := w.find(&doc, reflect.TypeOf(Config{}), "", 0); e != nil {
			return e
		}
	}
	return yamlError(err)
}

// yamlError turns a yaml.v3 error into one line naming the line and problem.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		fmt.Sscan(m[1], &line)
		msg = m[2]
	}
	if m := unknownKey.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("unknown key %q", m[1])
	}
	return &Error{Line: line, Err: errors.New(msg)}
}

var unknownKey = regexp.MustCompile(`^field (\S+) not found in type`)

// walker retraces yaml.v3's decoding of a node tree into a Go type, keeping
// the field path, and stops at the first node yaml.v3 would reject: a
// duplicate or unknown key, or a value of the wrong type. It checks leaves by
// decoding them alone, so what it accepts is what yaml.v3 accepts.
type walker struct {
	budget int                 // nodes left to visit; aliases can multiply them
	active map[*yaml.Node]bool // aliases being followed, against cycles
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// find returns the first problem in n decoded into t, or nil. at is the line
// to report for n itself when n was reached through an alias (0: n.Line).
func (w *walker) find(n *yaml.Node, t reflect.Type, path string, at int) *Error {
	if w.budget--; w.budget < 0 {
		return nil
	}
	if at == 0 {
		at = n.Line
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil
		}
		return w.find(n.Content[0], t, path, 0)
	case yaml.AliasNode:
		if n.Alias == nil || w.active[n] {
			return nil
		}
		w.active[n] = true
		defer delete(w.active, n)
		return w.find(n.Alias, t, path, at)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	custom := reflect.PointerTo(t).Implements(unmarshalerType)
	switch {
	case !custom && t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		return w.mapping(n, t, path, nil)
	case !custom && t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			if err := w.find(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), 0); err != nil {
				return err
			}
		}
		return nil
	}
	err := n.Decode(reflect.New(t).Interface())
	if err == nil {
		return nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return &Error{Line: at, Field: path, Err: fmt.Errorf("want %s, got %s", describeType(t), describeNode(n))}
	}
	// An UnmarshalYAML error, such as Duration's; its line is n's.
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		msg = m[2]
	}
	return &Error{Line: at, Field: path, Err: errors.New(msg)}
}

// mapping checks a mapping node decoded into struct type t. seen is nil for
// a mapping of its own; for one merged in with "<<" it holds the keys already
// set, which the merge skips (as yaml.v3 does).
func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string, seen map[string]bool) *Error {
	c := n.Content
	for i := 0; i+1 < len(c); i += 2 {
		for j := i + 2; j+1 < len(c); j += 2 {
			if c[i].Kind == c[j].Kind && c[i].Value == c[j].Value {
				return &Error{Line: c[j].Line, Field: joinPath(path, c[j].Value), Err: fmt.Errorf("key repeated (first set on line %d)", c[i].Line)}
			}
		}
	}
	fields := yamlFields(t)
	done := map[int]bool{}
	var merge *yaml.Node
	for i := 0; i+1 < len(c); i += 2 {
		k, v := c[i], c[i+1]
		if isMerge(k) {
			merge = v
			continue
		}
		var name string
		if k.Decode(&name) != nil {
			return &Error{Line: k.Line, Field: path, Err: fmt.Errorf("want a plain key, got %s", describeNode(k))}
		}
		if seen != nil {
			if seen[name] {
				continue
			}
			seen[name] = true
		}
		f, ok := fields[name]
		if !ok {
			return &Error{Line: k.Line, Field: joinPath(path, name), Err: errors.New("unknown key")}
		}
		if done[f.Index[0]] {
			return &Error{Line: k.Line, Field: joinPath(path, name), Err: errors.New("key repeated")}
		}
		done[f.Index[0]] = true
		if err := w.find(v, f.Type, joinPath(path, name), 0); err != nil {
			return err
		}
	}
	if merge == nil {
		return nil
	}
	if seen == nil {
		seen = map[string]bool{}
		for i := 0; i+1 < len(c); i += 2 {
			var name string
			if !isMerge(c[i]) && c[i].Decode(&name) == nil {
				seen[name] = true
			}
		}
	}
	merges := []*yaml.Node{merge}
	if merge.Kind == yaml.SequenceNode {
		merges = merge.Content
	}
	for _, m := range merges {
		if err := w.merge(m, t, path, seen); err != nil {
			return err
		}
	}
	return nil
}

// merge checks one mapping (or alias of one) merged into a struct with "<<".
func (w *walker) merge(m *yaml.Node, t reflect.Type, path string, seen map[string]bool) *Error {
	if w.budget--; w.budget < 0 {
		return nil
	}
	switch m.Kind {
	case yaml.AliasNode:
		if m.Alias == nil || w.active[m] {
			return nil
		}
		w.active[m] = true
		defer delete(w.active, m)
		if m.Alias.Kind == yaml.MappingNode {
			return w.mapping(m.Alias, t, path, seen)
		}
	case yaml.MappingNode:
		return w.mapping(m, t, path, seen)
	}
	return &Error{Line: m.Line, Field: joinPath(path, "<<"), Err: fmt.Errorf("want a mapping or a list of mappings, got %s", describeNode(m))}
}

// isMerge reports whether k is a "<<" merge key, as yaml.v3 decides it.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

// yamlFields maps the YAML keys of struct type t to its fields.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	m := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = strings.ToLower(f.Name)
		}
		m[name] = f
	}
	return m
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinPath appends key to path; a key that is not a plain name is quoted so
// the path stays on one line.
func joinPath(path, key string) string {
	if !plainKey.MatchString(key) {
		key = strconv.Quote(clip(key))
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// clip shortens s to at most 40 runes.
func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return s
}

// describeType names what a value of type t must be written as.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer >= 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	}
	return t.String()
}

// describeNode says what the YAML holds at n, on one line.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return strconv.Quote(clip(n.Value))
}

// UnmarshalYAML reads a Go duration string such as "30s" or "2m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if n.Kind != yaml.ScalarNode || n.Decode(&s) != nil {
		return fmt.Errorf("line %d: want a duration such as \"30s\", got %s", n.Line, describeNode(n))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: want a duration such as \"30s\", got %q", n.Line, clip(s))
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }
