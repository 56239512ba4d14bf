// Package decode reads named input, YAML or JSON, into Go values, with
// errors that name the field and its line.
//
// A document is parsed into a yaml.Node tree (YAML; JSON builds the same
// tree from strict JSON), checked, against a JSON Schema (Schema) or the
// fields of the Go value it goes into (Decode), and decoded by yaml.v3.
// The first problem stops the check with an *Error such as "line 4:
// lanes[1].modle: unknown key (did you mean "model"?)".
package decode

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is an input error tied to one field. Its text is one line,
// "FILE:LINE: FIELD: PROBLEM" ("line LINE: FIELD: PROBLEM" without a file;
// the line and field are left out when unknown).
type Error struct {
	File  string
	Line  int // 0 when unknown
	Field string
	Err   error
	col   int // the column, to order errors on one line
}

func (e *Error) Error() string {
	at := ""
	switch {
	case e.File != "" && e.Line > 0:
		at = fmt.Sprintf("%s:%d: ", e.File, e.Line)
	case e.File != "":
		at = e.File + ": "
	case e.Line > 0:
		at = fmt.Sprintf("line %d: ", e.Line)
	}
	if r := []rune(e.Field); len(r) > 100 { // a path down deep nesting: its ends say enough
		at += string(r[:60]) + "..." + string(r[len(r)-30:]) + ": "
	} else if e.Field != "" {
		at += e.Field + ": "
	}
	// One line, whatever the YAML library quoted back.
	return at + strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(e.Err.Error())
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error for field at line with a formatted problem.
func Errorf(line int, field, format string, args ...any) *Error {
	return &Error{Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Key appends key to path ("lanes[0].name"); a key that is not a plain
// name is quoted and clipped.
func Key(path, key string) string {
	if !plainKey.MatchString(key) {
		key = strconv.Quote(Clip(key))
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index appends a list index to path: "lanes" and 2 give "lanes[2]".
func Index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// Clip shortens s to at most 40 runes.
func Clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return s
}

// Describe says what the YAML holds at n, on one line.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(Clip(n.Value))
}

// unknownKey reports key as unknown, suggesting the nearest of keys within
// two edits (fewer than key's bytes), or one it begins.
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

// Keys returns the YAML key of each field of struct type t ("" for a field
// that has none), in field order.
func Keys(t reflect.Type) []string {
	keys := make([]string, t.NumField())
	for i := range keys {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "-" && t.Field(i).IsExported() {
			keys[i] = k
		}
	}
	return keys
}

// Lines holds the line each field path was set on.
type Lines map[string]int

// Line returns the line field (or the nearest enclosing field that was set)
// was set on; 0 when none was.
func (l Lines) Line(field string) int {
	for field != "" {
		if n, ok := l[field]; ok {
			return n
		}
		field = field[:max(0, strings.LastIndexAny(field, ".["))]
	}
	return 0
}

// maxMappings bounds the mappings merge keys may expand a document to.
const maxMappings = 100000

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// Decode decodes doc (a document node, or any node within one) into v, a
// pointer, with yaml.v3, once it has checked doc against v's type for what
// yaml.v3 refuses without naming the field, or lets by (unknown and
// repeated keys, wrong types, a fraction for an integer, bad merges, alias
// cycles and bombs). It returns the line of each field path set; an empty
// document leaves v as it is.
func Decode(doc *yaml.Node, v any) (Lines, error) {
	c := checker{lines: Lines{}, active: map[*yaml.Node]bool{}, budget: maxMappings}
	n := doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return c.lines, nil
		}
		n = n.Content[0]
	}
	if err := c.check(n, reflect.TypeOf(v).Elem(), "", 0); err != nil {
		return nil, err
	}
	if err := n.Decode(v); err != nil { // the check above refuses what yaml.v3 would
		return nil, &Error{Line: n.Line, Err: err}
	}
	return c.lines, nil
}

type checker struct {
	lines  Lines
	active map[*yaml.Node]bool // the mappings and lists being checked, against cycles
	budget int                 // mappings left to check: merges multiply them
}

// want says what a value of each kind the config and policy files hold is.
var want = map[reflect.Kind]string{reflect.Int: "an integer", reflect.Int64: "an integer",
	reflect.Float64: "a number", reflect.Bool: "true or false", reflect.String: "a string",
	reflect.Slice: "a list", reflect.Struct: "a mapping"}

// check checks n as a value of type t at path. at is the line to report
// for n (0: n's own).
func (c *checker) check(n *yaml.Node, t reflect.Type, path string, at int) error {
	if at == 0 {
		at = n.Line
	}
	if n.Kind == yaml.AliasNode {
		if c.active[n.Alias] {
			return Errorf(at, path, "an alias refers to a value that holds it")
		}
		return c.check(n.Alias, t, path, at)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	custom := reflect.PointerTo(t).Implements(unmarshaler)
	switch {
	case n.ShortTag() == "!!null":
		return nil // as yaml.v3: a null clears a pointer or list, else keeps the default
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct && !custom:
		return c.mapping(n, t, path, map[string]bool{})
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice && !custom:
		c.active[n] = true // a list is entered again only through an alias, refused above
		defer delete(c.active, n)
		for i, e := range n.Content {
			p := Index(path, i)
			c.lines[p] = e.Line
			if err := c.check(e, t.Elem(), p, 0); err != nil {
				return err
			}
		}
		return nil
	case n.Kind != yaml.ScalarNode && !custom:
		return Errorf(at, path, "want %s, got %s", want[t.Kind()], Describe(n))
	case !custom && fits(n, t):
		return nil
	}
	var te *yaml.TypeError
	switch err := n.Decode(reflect.New(t).Interface()); {
	case errors.As(err, &te) || err == nil && !custom && t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64 && n.ShortTag() != "!!int":
		return Errorf(at, path, "want %s, got %s", want[t.Kind()], Describe(n))
	case err != nil:
		return &Error{Line: at, Field: path, Err: err}
	}
	return nil
}

// fits reports whether scalar n surely decodes into a value of type t, for
// the common cases, without a yaml.v3 decoder each.
func fits(n *yaml.Node, t reflect.Type) bool {
	tag, v := n.ShortTag(), n.Value
	digits := len(v) <= 18 && strings.Trim(strings.TrimPrefix(v, "-"), "0123456789") == "" && v != "" && v != "-"
	switch t.Kind() {
	case reflect.String:
		return tag == "!!str"
	case reflect.Bool:
		return tag == "!!bool" && (v == "true" || v == "false")
	case reflect.Int, reflect.Int64:
		if tag != "!!int" || !digits {
			return false
		}
		_, err := strconv.ParseInt(v, 10, t.Bits())
		return err == nil
	case reflect.Float64:
		if tag != "!!float" || strings.Trim(v, "0123456789.eE+-") != "" {
			return tag == "!!int" && digits
		}
		_, err := strconv.ParseFloat(v, 64)
		return err == nil
	}
	return false
}

// mapping checks mapping n as struct type t. Keys in set are set already:
// as in yaml.v3, own keys win over merged ones, earlier merges over later.
func (c *checker) mapping(n *yaml.Node, t reflect.Type, path string, set map[string]bool) error {
	if c.budget--; c.budget < 0 {
		return Errorf(n.Line, path, "aliases expand to more than %d mappings", maxMappings)
	}
	if c.active[n] {
		return Errorf(n.Line, path, "merges a mapping into itself")
	}
	c.active[n] = true
	defer delete(c.active, n)
	keys, first := Keys(t), map[string]int{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, line, field, err := mappingKey(n, i, path, first, false)
		if err != nil {
			return err
		}
		f := slices.Index(keys, k.Value)
		switch v := n.Content[i+1]; {
		case k.Value == "<<" && k.ShortTag() == "!!merge":
			merges = []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				merges = v.Content
			}
		case f < 0 || k.Value == "":
			return &Error{Line: line, Field: field, Err: unknownKey(k.Value, keys)}
		case !set[k.Value]:
			set[k.Value] = true
			c.lines[field] = line
			if err := c.check(v, t.Field(f).Type, field, 0); err != nil {
				return err
			}
		}
	}
	for _, m := range merges {
		at := m.Line
		if m.Kind == yaml.AliasNode {
			m = m.Alias
		}
		if m.Kind != yaml.MappingNode {
			return Errorf(at, Key(path, "<<"), "want a mapping or a list of mappings, got %s", Describe(m))
		}
		if err := c.mapping(m, t, path, set); err != nil {
			return err
		}
	}
	return nil
}

// mappingKey returns the key at n.Content[i], an alias resolved, with its
// line and field path; a key that is not a scalar or is in first (key →
// line, where it goes next) is an error.
func mappingKey(n *yaml.Node, i int, path string, first map[string]int, json bool) (*yaml.Node, int, string, error) {
	k, line := n.Content[i], n.Content[i].Line
	if k.Kind == yaml.AliasNode {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return nil, 0, "", Errorf(line, path, "want a plain key, got %s", Describe(k))
	}
	field := Key(path, k.Value)
	if l, dup := first[k.Value]; dup && json {
		return nil, 0, "", Errorf(line, field, "repeated field")
	} else if dup {
		return nil, 0, "", Errorf(line, field, "key repeated (first set on line %d)", l)
	}
	first[k.Value] = line
	return k, line, field, nil
}
