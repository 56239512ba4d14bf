package decode

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"gopkg.in/yaml.v3"
)

// SchemaOptions tune Schema.
type SchemaOptions struct {
	// MaxValues bounds the values the document may hold once its aliases
	// are expanded; 0 means 100000.
	MaxValues int
	// Pattern says what a string that fails a schema pattern should have
	// been, by field path ("want YYYY-MM-DDTHH"); nil or "" for a message
	// that quotes the pattern.
	Pattern func(field string) string
}

// Schema checks the YAML document doc against sch and returns the first
// violation in document order as an *Error naming the field and its line:
// "line 12: lanes[1].failures: missing", "line 5: extra: unknown key",
// "line 9: lanes[0].next_queue_s: must be >= 0". A number that is not
// finite (.inf, .nan), which JSON cannot hold, is an error here too.
func Schema(sch *jsonschema.Schema, doc *yaml.Node, opts SchemaOptions) error {
	if opts.MaxValues <= 0 {
		opts.MaxValues = 100000
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return &Error{Err: errors.New("empty document")}
		}
		doc = doc.Content[0]
	}
	c := converter{budget: opts.MaxValues, max: opts.MaxValues, active: map[*yaml.Node]bool{}}
	inst, err := c.value(doc, "", 0)
	if err != nil {
		return err
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return err
	}
	var leaves []*Error
	collect(doc, ve, opts, &leaves)
	if len(leaves) == 0 {
		return &Error{Err: errors.New("does not match the schema")}
	}
	return slices.MinFunc(leaves, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
}

// converter turns a YAML tree into the values jsonschema validates.
type converter struct {
	budget, max int
	active      map[*yaml.Node]bool // the mappings and lists being converted
}

func (c *converter) value(n *yaml.Node, path string, at int) (any, error) {
	if at == 0 {
		at = n.Line
	}
	if c.budget--; c.budget < 0 {
		return nil, Errorf(at, path, "aliases expand to more than %d values", c.max)
	}
	if n.Kind == yaml.AliasNode {
		if c.active[n.Alias] {
			return nil, Errorf(at, path, "an alias refers to a node that holds it")
		}
		return c.value(n.Alias, path, at)
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		if len(c.active) >= maxDepth {
			return nil, Errorf(at, path, "nested more than %d deep", maxDepth)
		}
		c.active[n] = true
		defer delete(c.active, n)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, Errorf(n.Content[i].Line, path, "want a plain key, got %s", Describe(k))
			}
			field := Key(path, k.Value)
			if l, dup := first[k.Value]; dup {
				return nil, Errorf(n.Content[i].Line, field, "key repeated (first set on line %d)", l)
			}
			first[k.Value] = n.Content[i].Line
			v, err := c.value(n.Content[i+1], field, 0)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := c.value(e, Index(path, i), 0)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		return s, nil
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, Errorf(at, path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return nil, Errorf(at, path, "must be a finite number")
		}
		return v, nil
	}
	return n.Value, nil // strings, and timestamps as written
}

// collect adds the leaves of the error tree ve as *Error, each with the
// field and line of the node it is about. Of the branches of a oneOf or
// anyOf, a branch that only failed on the type is left out when another
// did match the type ("want an RFC 3339 time", not "want null").
func collect(doc *yaml.Node, ve *jsonschema.ValidationError, opts SchemaOptions, out *[]*Error) {
	causes := ve.Causes
	switch ve.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		var keep []*jsonschema.ValidationError
		for _, c := range causes {
			if !onlyType(c) {
				keep = append(keep, c)
			}
		}
		if len(keep) > 0 {
			causes = keep
		}
	}
	if len(causes) > 0 {
		for _, c := range causes {
			collect(doc, c, opts, out)
		}
		return
	}
	field, line, node := locate(doc, ve.InstanceLocation)
	e := &Error{Line: line, Field: field}
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		e.Field, e.Err = Key(field, k.Missing[0]), errors.New("missing")
	case *kind.AdditionalProperties:
		e.Field, e.Err = Key(field, k.Properties[0]), errors.New("unknown key")
		if node != nil {
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == k.Properties[0] {
					e.Line = node.Content[i].Line
				}
			}
		}
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = map[string]string{"number": "a number", "integer": "an integer", "string": "a string",
				"boolean": "true or false", "array": "a list", "object": "a mapping", "null": "null"}[w]
		}
		got := k.Got
		if node != nil {
			got = Describe(node)
		}
		e.Err = fmt.Errorf("want %s, got %s", strings.Join(want, " or "), got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		if len(want) == 2 {
			e.Err = fmt.Errorf("must be %s or %s", want[0], want[1])
		} else {
			e.Err = fmt.Errorf("must be one of %s", strings.Join(want, ", "))
		}
	case *kind.Const:
		e.Err = fmt.Errorf("must be %v", k.Want)
	case *kind.Minimum:
		e.Err = fmt.Errorf("must be >= %s", ratString(k.Want))
	case *kind.Maximum:
		e.Err = fmt.Errorf("must be at most %s", ratString(k.Want))
	case *kind.MinLength:
		e.Err = errors.New("must not be empty")
	case *kind.UniqueItems:
		e.Err = fmt.Errorf("items %d and %d are the same", k.Duplicates[0], k.Duplicates[1])
	case *kind.Pattern:
		hint := ""
		if opts.Pattern != nil {
			hint = opts.Pattern(field)
		}
		if hint == "" {
			hint = "want a string matching " + k.Want
		}
		e.Err = fmt.Errorf("%s, got %q", hint, Clip(k.Got))
	case *kind.Not:
		e.Err = errors.New("not allowed here")
	default:
		e.Err = fmt.Errorf("fails the schema's %s", strings.Join(ve.ErrorKind.KeywordPath(), "/"))
	}
	*out = append(*out, e)
}

// onlyType reports whether every leaf under ve is a type mismatch.
func onlyType(ve *jsonschema.ValidationError) bool {
	if len(ve.Causes) == 0 {
		_, ok := ve.ErrorKind.(*kind.Type)
		return ok
	}
	for _, c := range ve.Causes {
		if !onlyType(c) {
			return false
		}
	}
	return true
}

// locate follows an instance location through the YAML tree: the field
// path, the line and the node it names (nil if not found).
func locate(n *yaml.Node, loc []string) (string, int, *yaml.Node) {
	field := ""
	for _, tok := range loc {
		for n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			field = Key(field, tok)
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == tok {
					next = n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			field = Index(field, i)
			if err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
			}
		}
		if next == nil {
			return field, n.Line, nil
		}
		n = next
	}
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return field, n.Line, n
}

// ratString writes r as its shortest decimal.
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'f', -1, 64)
}
