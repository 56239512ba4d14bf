package decode

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"gopkg.in/yaml.v3"
)

// SchemaOptions tune Schema.
type SchemaOptions struct {
	Pattern func(field string) string // what a string failing a pattern should be; "": quote it
	JSON    bool                      // speak JSON: "must be an object", "unknown field"
	Root    string                    // the whole document's name in an error ("input")
}

// CompileSchema compiles the JSON Schema in data.
func CompileSchema(data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("schema.json")
}

// Schema checks the YAML document doc against sch and returns the first
// violation in document order as an *Error naming the field and its line:
// "line 12: lanes[1].failures: missing". A non-finite number is one too.
func Schema(sch *jsonschema.Schema, doc *yaml.Node, opts SchemaOptions) error {
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return &Error{Err: errors.New("empty document")}
		}
		doc = doc.Content[0]
	}
	c := converter{budget: maxValues, json: opts.JSON, active: map[*yaml.Node]bool{}}
	inst, err := c.value(doc, "", 0)
	if err != nil {
		return err
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return err
	}
	var leaves []*Error // never none: an error tree has leaves
	collect(doc, ve, opts, &leaves)
	e := slices.MinFunc(leaves, func(a, b *Error) int { return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.col, b.col)) })
	if e.Field == "" {
		e.Field = opts.Root
	}
	return e
}

// maxValues bounds the values aliases may expand a document to.
const maxValues = 100000

// converter turns a YAML tree into the values jsonschema validates.
type converter struct {
	budget int
	json   bool
	active map[*yaml.Node]bool // the mappings and lists being converted
}

func (c *converter) value(n *yaml.Node, path string, at int) (any, error) {
	if at == 0 {
		at = n.Line
	}
	if c.budget--; c.budget < 0 {
		return nil, Errorf(at, path, "aliases expand to more than %d values", maxValues)
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
			k, _, field, err := mappingKey(n, i, path, first, c.json)
			if err != nil {
				return nil, err
			}
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
		if fits(n, reflect.TypeFor[float64]()) { // the common cases, without a yaml.v3 decoder each
			if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil && n.ShortTag() == "!!int" {
				return int(i), nil
			} else if f, _ := strconv.ParseFloat(n.Value, 64); n.ShortTag() == "!!float" && !math.IsInf(f, 0) {
				return f, nil
			}
		}
		if err := n.Decode(&v); err != nil {
			// As written, out of range too (1e400 is +Inf, refused below).
			x, rerr := strconv.ParseFloat(n.Value, 64)
			if !errors.Is(rerr, strconv.ErrRange) {
				return nil, Errorf(at, path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
			}
			v = x
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return nil, Errorf(at, path, "must be a finite number")
		}
		return v, nil
	}
	return n.Value, nil // strings, and timestamps as written
}

// collect adds the leaves of the error tree ve as *Error, each with the
// field and line of its node; of a oneOf or anyOf, branches that failed on
// the type alone give way to one that did not.
func collect(doc *yaml.Node, ve *jsonschema.ValidationError, opts SchemaOptions, out *[]*Error) {
	causes := ve.Causes
	switch ve.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		if keep := slices.DeleteFunc(slices.Clone(causes), onlyType); len(keep) > 0 {
			causes = keep
		}
	}
	if len(causes) > 0 {
		for _, c := range causes {
			collect(doc, c, opts, out)
		}
		return
	}
	field, at, found := locate(doc, ve.InstanceLocation)
	e := &Error{Line: at.Line, Field: field, col: at.Column}
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		// After what is wrong inside the mapping on its first line.
		e.Field, e.Err, e.col = Key(field, k.Missing[0]), errors.New("missing"), math.MaxInt
	case *kind.AdditionalProperties:
		e.Err = errors.New("unknown key")
		if opts.JSON {
			e.Err = errors.New("unknown field")
		}
		e.Field = Key(field, k.Properties[0])
		for i := 0; found && i+1 < len(at.Content); i += 2 { // the first in the document
			if c := at.Content[i]; slices.Contains(k.Properties, c.Value) {
				e.Line, e.col, e.Field = c.Line, c.Column, Key(field, c.Value)
				break
			}
		}
	case *kind.Type:
		names := map[string]string{"number": "a number", "integer": "an integer", "string": "a string",
			"boolean": "true or false", "array": "a list", "object": "a mapping", "null": "null"}
		if opts.JSON {
			names["array"], names["object"] = "an array", "an object"
		}
		var want []string
		for _, w := range k.Want {
			want = append(want, names[w])
		}
		if i := slices.Index(want, "null"); i >= 0 { // "a string or null"
			want = append(slices.Delete(want, i, i+1), "null")
		}
		got := k.Got
		if found {
			got = Describe(at)
		}
		e.Err = fmt.Errorf("want %s, got %s", strings.Join(want, " or "), got)
		if opts.JSON {
			e.Err = fmt.Errorf("must be %s", strings.Join(want, " or "))
		}
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
	return len(slices.DeleteFunc(slices.Clone(ve.Causes), onlyType)) == 0
}

// Line returns the line of field ("attempts[3].queue_s") in doc, or of the
// nearest enclosing field there.
func Line(doc *yaml.Node, field string) int {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	_, n, _ := locate(doc, strings.FieldsFunc(field, func(r rune) bool { return r == '.' || r == '[' || r == ']' }))
	return n.Line
}

// locate follows an instance location through the YAML tree to the field
// path, the deepest node on it and whether that is the node named.
func locate(n *yaml.Node, loc []string) (string, *yaml.Node, bool) {
	field := ""
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	for _, tok := range loc {
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
			return field, n, false
		}
		for n = next; n.Kind == yaml.AliasNode; {
			n = n.Alias
		}
	}
	return field, n, true
}

// ratString writes r as its shortest decimal.
func ratString(r *big.Rat) string {
	f, _ := r.Float64() // the schemas' bounds are exact in a float64
	return strconv.FormatFloat(f, 'f', -1, 64)
}
