package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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

// maxMappings bounds the mappings one document may decode: merge keys
// ("<<: [*a, *a]") can make a small file expand without end.
const maxMappings = 100000

// Parse reads a configuration from r; dir is the folder relative paths
// resolve against. The document is read as a yaml.Node tree and walked into
// the Config field by field, so an error names the field and its line.
func Parse(r io.Reader, dir string) (*Config, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(r).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		return nil, &Error{Line: line, Err: errors.New("not valid YAML: " + msg)}
	}
	cfg := Default()
	d := decoder{budget: maxMappings, lines: map[string]int{}, active: map[*yaml.Node]bool{}}
	if len(doc.Content) == 1 {
		if err := d.value(doc.Content[0], reflect.ValueOf(cfg).Elem(), "", 0); err != nil {
			return nil, err
		}
	}
	cfg.Dir = dir
	if err := cfg.validate(); err != nil {
		var ce *Error
		if errors.As(err, &ce) && ce.Line == 0 {
			ce.Line = d.lineOf(ce.Field)
		}
		return nil, err
	}
	return cfg, nil
}

// decoder walks a node tree into a Go value as yaml.v3 would decode it, but
// stops at the first unknown or repeated key or ill-typed value with an error
// naming the field path and line.
type decoder struct {
	budget int                 // mappings left to decode: merges multiply them
	lines  map[string]int      // field path → line it was set on
	active map[*yaml.Node]bool // mappings being decoded, against merge cycles
}

// lineOf returns the line field (or the nearest enclosing field) was set on.
func (d *decoder) lineOf(field string) int {
	for field != "" {
		if l, ok := d.lines[field]; ok {
			return l
		}
		field = field[:max(0, strings.LastIndexAny(field, ".["))]
	}
	return 0
}

// value decodes n into v. at is the line to report for n (0: n's own); an
// alias reports the line it is used on.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, at int) error {
	if at == 0 {
		at = n.Line
	}
	if n.Kind == yaml.AliasNode {
		return d.value(n.Alias, v, path, at)
	}
	if n.ShortTag() == "!!null" { // as yaml.v3: a null clears a pointer or list, else keeps the default
		if v.Kind() == reflect.Pointer || v.Kind() == reflect.Slice {
			v.SetZero()
		}
		return nil
	}
	if u, ok := v.Addr().Interface().(yaml.Unmarshaler); ok {
		if err := u.UnmarshalYAML(n); err != nil {
			return &Error{Line: at, Field: path, Err: err}
		}
		return nil
	}
	switch {
	case v.Kind() == reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		v.Set(p)
		return d.value(n, p.Elem(), path, at)
	case v.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		return d.mapping(n, v, path, map[string]bool{})
	case v.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		v.Set(reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content)))
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = e.Line
			if err := d.value(e, v.Index(i), p, 0); err != nil {
				return err
			}
		}
		return nil
	}
	// Scalars decode as yaml.v3 decodes them, except that an integer field
	// takes only an integer: yaml.v3 would truncate 1.5 to 1.
	ok := n.Kind == yaml.ScalarNode && v.Kind() != reflect.Struct && v.Kind() != reflect.Slice
	if !ok || v.CanInt() && n.ShortTag() != "!!int" || n.Decode(v.Addr().Interface()) != nil {
		return &Error{Line: at, Field: path, Err: fmt.Errorf("want %s, got %s", kindNames[v.Kind()], describeNode(n))}
	}
	return nil
}

var kindNames = map[reflect.Kind]string{reflect.Int: "an integer", reflect.Int64: "an integer",
	reflect.Float64: "a number", reflect.Bool: "true or false", reflect.String: "a string",
	reflect.Slice: "a list", reflect.Struct: "a mapping"}

// mapping decodes mapping n into struct v. Keys in set are already set, by
// the mapping itself or a merge ("<<") before; as in yaml.v3, a mapping's own
// keys win over what it merges, and an earlier merge wins over a later one.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string, set map[string]bool) error {
	if d.budget--; d.budget < 0 {
		return &Error{Line: n.Line, Field: path, Err: fmt.Errorf("aliases expand to more than %d mappings", maxMappings)}
	}
	if d.active[n] {
		return &Error{Line: n.Line, Field: path, Err: errors.New("merges a mapping into itself")}
	}
	d.active[n] = true
	defer delete(d.active, n)
	keys := yamlKeys(v.Type())
	first := map[string]int{} // key → line
	var merge *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, line := n.Content[i], n.Content[i].Line
		if k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return &Error{Line: line, Field: path, Err: fmt.Errorf("want a plain key, got %s", describeNode(k))}
		}
		if l, dup := first[k.Value]; dup {
			return &Error{Line: line, Field: joinPath(path, k.Value), Err: fmt.Errorf("key repeated (first set on line %d)", l)}
		}
		first[k.Value] = line
		f := slices.Index(keys, k.Value)
		switch {
		case k.Value == "<<" && k.ShortTag() == "!!merge":
			merge = n.Content[i+1]
		case f < 0 || k.Value == "":
			return &Error{Line: line, Field: joinPath(path, k.Value), Err: unknownKey(k.Value, keys)}
		case !set[k.Value]:
			set[k.Value] = true
			field := joinPath(path, k.Value)
			d.lines[field] = line
			if err := d.value(n.Content[i+1], v.Field(f), field, 0); err != nil {
				return err
			}
		}
	}
	merges := []*yaml.Node{merge}
	if merge != nil && merge.Kind == yaml.SequenceNode {
		merges = merge.Content
	}
	for _, m := range merges {
		if m == nil {
			break
		}
		at := m.Line
		if m.Kind == yaml.AliasNode {
			m = m.Alias
		}
		if m.Kind != yaml.MappingNode {
			return &Error{Line: at, Field: joinPath(path, "<<"), Err: fmt.Errorf("want a mapping or a list of mappings, got %s", describeNode(m))}
		}
		if err := d.mapping(m, v, path, set); err != nil {
			return err
		}
	}
	return nil
}

var keyCache sync.Map // reflect.Type → []string

// yamlKeys returns the YAML key of each field of struct type t ("" for none).
func yamlKeys(t reflect.Type) []string {
	if keys, ok := keyCache.Load(t); ok {
		return keys.([]string)
	}
	keys := make([]string, t.NumField())
	for i := range keys {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "-" && t.Field(i).IsExported() {
			keys[i] = k
		}
	}
	keyCache.Store(t, keys)
	return keys
}

// unknownKey reports key as unknown, suggesting the nearest of keys: one at
// most two edits away (and fewer edits than key has bytes), or one key begins.
func unknownKey(key string, keys []string) error {
	best, bestD := "", math.MaxInt
	for _, k := range keys {
		d := editDistance(key, k)
		if k != "" && (d <= 2 && d < len(key) || len(key) >= 3 && strings.HasPrefix(k, key)) && d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return errors.New("unknown key")
	}
	return fmt.Errorf("unknown key (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			diag, row[j] = row[j], min(row[j]+1, row[j-1]+1, diag+cost)
		}
	}
	return row[len(b)]
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

// describeNode says what the YAML holds at n, on one line.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(clip(n.Value))
}

// UnmarshalYAML reads a Go duration string such as "30s" or "2m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a duration such as \"30s\", got %s", describeNode(n))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("want a duration such as \"30s\", got %q", clip(n.Value))
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }
