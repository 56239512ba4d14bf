// Package decode reads named input (YAML, or JSON through the same tree)
// into Go values, with errors that name the field and its line.
//
// A document is parsed into a yaml.Node tree (JSON by JSON, which builds
// the same tree from strict JSON) and walked into a struct field by field:
// an unknown, repeated or missing key, or a value of the wrong type, stops
// the walk with an *Error such as "line 4: lanes[1].modle: unknown key (did
// you mean "model"?)". The walk records the line of each field path, so that
// a check made after decoding can report its line too (Decoder.Line).
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
	"sync"

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
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if f := e.Field; f != "" {
		if r := []rune(f); len(r) > 100 { // a path down deep nesting: its ends say enough
			f = string(r[:60]) + "..." + string(r[len(r)-30:])
		}
		b.WriteString(f)
		b.WriteString(": ")
	}
	// One line, whatever the YAML library quoted back.
	b.WriteString(strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(e.Err.Error()))
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error for field at line with a formatted problem.
func Errorf(line int, field, format string, args ...any) *Error {
	return &Error{Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Key appends key to path ("lanes[0]" + "name" is "lanes[0].name"); a key
// that is not a plain name is quoted and clipped so the path stays on one
// line.
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

// UnknownKey reports key as unknown, suggesting the nearest of keys: one at
// most two edits away (and fewer edits than key has bytes), or one key begins.
func UnknownKey(key string, keys []string) error {
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

// Options tune a Decoder.
type Options struct {
	// JSON speaks JSON: "must be an object", "unknown field", "repeated
	// field", where YAML has "want a mapping, got ...", "unknown key", "key
	// repeated"; a null decodes only into a pointer, and a scalar only into
	// a field of its own type (a string into a string, a number into a
	// number, true or false into a bool).
	JSON bool
	// Root names the whole document in an error about it ("input"); ""
	// leaves the field out.
	Root string
	// MaxMappings bounds the mappings one document may decode: YAML merge
	// keys ("<<: [*a, *a]") can make a small file expand without end.
	// 0 means 100000.
	MaxMappings int
}

// Decoder walks a node tree into a Go value as yaml.v3 would decode it, but
// stops at the first unknown, repeated or missing key or ill-typed value
// with an *Error naming the field path and line. A struct field tagged
// `decode:"required"` must be present. A field whose type implements
// yaml.Unmarshaler decodes itself; its error gets the field and line.
type Decoder struct {
	opts   Options
	budget int                 // mappings left to decode: merges multiply them
	lines  map[string]int      // field path → line it was set on
	active map[*yaml.Node]bool // mappings and lists being decoded, against cycles
}

// New returns a Decoder for one document.
func New(opts Options) *Decoder {
	if opts.MaxMappings <= 0 {
		opts.MaxMappings = 100000
	}
	return &Decoder{opts: opts, budget: opts.MaxMappings, lines: map[string]int{}, active: map[*yaml.Node]bool{}}
}

// Decode decodes n (a document node or any node within one) into v, a
// pointer. An empty document leaves v as it is.
func (d *Decoder) Decode(n *yaml.Node, v any) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	return d.value(n, reflect.ValueOf(v).Elem(), "", 0)
}

// Line returns the line field (or the nearest enclosing field that was set)
// was set on; 0 when none was.
func (d *Decoder) Line(field string) int {
	for field != "" {
		if l, ok := d.lines[field]; ok {
			return l
		}
		field = field[:max(0, strings.LastIndexAny(field, ".["))]
	}
	return 0
}

// Set reports whether field was present in the document.
func (d *Decoder) Set(field string) bool {
	_, ok := d.lines[field]
	return ok
}

// value decodes n into v. at is the line to report for n (0: n's own); an
// alias reports the line it is used on.
func (d *Decoder) value(n *yaml.Node, v reflect.Value, path string, at int) error {
	if at == 0 {
		at = n.Line
	}
	if n.Kind == yaml.AliasNode {
		return d.value(n.Alias, v, path, at)
	}
	if n.ShortTag() == "!!null" {
		switch {
		case d.opts.JSON && v.Kind() != reflect.Pointer:
			return d.typeErr(n, v.Type(), path, at)
		case v.Kind() == reflect.Pointer || v.Kind() == reflect.Slice:
			v.SetZero() // as yaml.v3: a null clears a pointer or list, else keeps the default
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
		_, custom := p.Interface().(yaml.Unmarshaler)
		if d.opts.JSON && !custom && n.Kind == yaml.ScalarNode && p.Elem().Kind() != reflect.Struct && p.Elem().Kind() != reflect.Slice {
			if !d.scalar(n, p.Elem()) {
				return d.typeErr(n, v.Type(), path, at) // "must be a string or null"
			}
			return nil
		}
		return d.value(n, p.Elem(), path, at)
	case v.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		return d.mapping(n, v, path, map[string]bool{})
	case v.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		if d.active[n] {
			return Errorf(at, path, "an alias refers to a list that holds it")
		}
		d.active[n] = true
		defer delete(d.active, n)
		v.Set(reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content)))
		for i, e := range n.Content {
			p := Index(path, i)
			d.lines[p] = e.Line
			if err := d.value(e, v.Index(i), p, 0); err != nil {
				return err
			}
		}
		return nil
	}
	if !d.scalar(n, v) {
		return d.typeErr(n, v.Type(), path, at)
	}
	return nil
}

// typeErr says that n at path is not a value of type t.
func (d *Decoder) typeErr(n *yaml.Node, t reflect.Type, path string, at int) error {
	if path == "" {
		path = d.opts.Root
	}
	if d.opts.JSON {
		return Errorf(at, path, "must be %s", d.kindName(t))
	}
	return Errorf(at, path, "want %s, got %s", d.kindName(t), d.Describe(n))
}

// scalar decodes scalar n into v as yaml.v3 decodes it, except that an
// integer field takes only an integer (yaml.v3 would truncate 1.5 to 1)
// and, with Options.JSON, each kind only its own type.
func (d *Decoder) scalar(n *yaml.Node, v reflect.Value) bool {
	if n.Kind != yaml.ScalarNode || v.Kind() == reflect.Struct || v.Kind() == reflect.Slice {
		return false
	}
	tag := n.ShortTag()
	if v.CanInt() && tag != "!!int" {
		return false
	}
	if d.opts.JSON {
		switch v.Kind() {
		case reflect.String:
			if tag != "!!str" {
				return false
			}
		case reflect.Bool:
			if tag != "!!bool" {
				return false
			}
		case reflect.Float64, reflect.Float32:
			if tag != "!!int" && tag != "!!float" {
				return false
			}
			// As written, out of range too (1e400 is +Inf): the caller's
			// bounds then say what is wrong with it.
			x, err := strconv.ParseFloat(n.Value, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return false
			}
			v.SetFloat(x)
			return true
		}
	}
	return n.Decode(v.Addr().Interface()) == nil
}

var kindNames = map[reflect.Kind]string{reflect.Int: "an integer", reflect.Int64: "an integer",
	reflect.Float64: "a number", reflect.Bool: "true or false", reflect.String: "a string",
	reflect.Slice: "a list", reflect.Struct: "a mapping"}

// kindName says what a value of type t is, in the input's terms.
func (d *Decoder) kindName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		s := d.kindName(t.Elem())
		if d.opts.JSON {
			s += " or null"
		}
		return s
	}
	s := kindNames[t.Kind()]
	if d.opts.JSON {
		switch t.Kind() {
		case reflect.Slice:
			s = "an array"
		case reflect.Struct:
			s = "an object"
		}
	}
	if s == "" {
		s = "a " + t.Kind().String()
	}
	return s
}

// mapping decodes mapping n into struct v. Keys in set are already set, by
// the mapping itself or a merge ("<<") before; as in yaml.v3, a mapping's own
// keys win over what it merges, and an earlier merge wins over a later one.
func (d *Decoder) mapping(n *yaml.Node, v reflect.Value, path string, set map[string]bool) error {
	if d.budget--; d.budget < 0 {
		return Errorf(n.Line, path, "aliases expand to more than %d mappings", d.opts.MaxMappings)
	}
	if d.active[n] {
		return Errorf(n.Line, path, "merges a mapping into itself")
	}
	d.active[n] = true
	defer delete(d.active, n)
	info := structInfo(v.Type())
	first := map[string]int{} // key → line
	var merge *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, line := n.Content[i], n.Content[i].Line
		if k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return Errorf(line, path, "want a plain key, got %s", d.Describe(k))
		}
		if l, dup := first[k.Value]; dup {
			if d.opts.JSON {
				return Errorf(line, Key(path, k.Value), "repeated field")
			}
			return Errorf(line, Key(path, k.Value), "key repeated (first set on line %d)", l)
		}
		first[k.Value] = line
		f := slices.Index(info.keys, k.Value)
		switch {
		case k.Value == "<<" && k.ShortTag() == "!!merge":
			merge = n.Content[i+1]
		case f < 0 || k.Value == "":
			if d.opts.JSON {
				return Errorf(line, Key(path, k.Value), "unknown field")
			}
			return &Error{Line: line, Field: Key(path, k.Value), Err: UnknownKey(k.Value, info.keys)}
		case !set[k.Value]:
			set[k.Value] = true
			field := Key(path, k.Value)
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
			return Errorf(at, Key(path, "<<"), "want a mapping or a list of mappings, got %s", d.Describe(m))
		}
		if err := d.mapping(m, v, path, set); err != nil {
			return err
		}
	}
	for _, k := range info.required {
		if !set[k] {
			return Errorf(n.Line, Key(path, k), "missing")
		}
	}
	return nil
}

type fields struct {
	keys     []string // the key of each field ("" for none)
	required []string // keys tagged `decode:"required"`
}

var fieldCache sync.Map // reflect.Type → fields

// structInfo returns the YAML keys of struct type t.
func structInfo(t reflect.Type) fields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(fields)
	}
	f := fields{keys: make([]string, t.NumField())}
	for i := range f.keys {
		sf := t.Field(i)
		if k, _, _ := strings.Cut(sf.Tag.Get("yaml"), ","); k != "-" && sf.IsExported() {
			f.keys[i] = k
			if sf.Tag.Get("decode") == "required" {
				f.required = append(f.required, k)
			}
		}
	}
	fieldCache.Store(t, f)
	return f
}

// Describe says what the input holds at n, on one line.
func (d *Decoder) Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		if d.opts.JSON {
			return "an object"
		}
		return "a mapping"
	case yaml.SequenceNode:
		if d.opts.JSON {
			return "an array"
		}
		return "a list"
	}
	if d.opts.JSON && n.ShortTag() != "!!str" {
		return Clip(n.Value) // a number, true, false or null
	}
	return strconv.Quote(Clip(n.Value))
}

// Describe says what the YAML holds at n, on one line.
func Describe(n *yaml.Node) string { return (&Decoder{}).Describe(n) }

// Keys returns the YAML key of each field of struct type t ("" for a field
// that has none), in field order.
func Keys(t reflect.Type) []string { return structInfo(t).keys }
