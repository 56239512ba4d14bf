package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxDepth bounds how deep JSON may nest.
const maxDepth = 1000

// JSON parses data, one strict JSON value, into a yaml.Node tree for
// Schema (with SchemaOptions.JSON), each node tagged with its JSON type and
// its line (!!int: an integer of at most 18 digits), a repeated key kept
// for Schema to refuse. At most maxNodes values, 1000 deep; errors are
// *Error with the line and the path reached.
func JSON(data []byte, maxNodes int) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var nl []int // the offset of each '\n'
	for i, b := range data {
		if b == '\n' {
			nl = append(nl, i)
		}
	}
	lineAt := func(off int64) int { return sort.SearchInts(nl, int(off)) + 1 }
	var stack []*yaml.Node // the open objects and arrays, outermost first
	var root *yaml.Node
	nodes := 0
	for root == nil || len(stack) > 0 {
		tok, err := dec.Token()
		line := lineAt(dec.InputOffset())
		if err != nil {
			var se *json.SyntaxError
			switch {
			case errors.As(err, &se):
				return nil, &Error{Line: lineAt(se.Offset), Field: pathOf(stack), Err: fmt.Errorf("not valid JSON at byte %d: %w", se.Offset, err)}
			case errors.Is(err, io.EOF) && root == nil && len(stack) == 0:
				return nil, &Error{Err: errors.New("no JSON value")}
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				return nil, &Error{Line: line, Field: pathOf(stack), Err: errors.New("the JSON ends early")}
			}
			return nil, &Error{Line: line, Field: pathOf(stack), Err: fmt.Errorf("not valid JSON: %w", err)}
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if nodes++; nodes > maxNodes {
			return nil, &Error{Line: line, Field: pathOf(stack), Err: fmt.Errorf("more than %d JSON values", maxNodes)}
		}
		n := &yaml.Node{Kind: yaml.ScalarNode, Line: line}
		switch v := tok.(type) {
		case json.Delim:
			if len(stack) >= maxDepth {
				return nil, &Error{Line: line, Field: pathOf(stack), Err: fmt.Errorf("nested more than %d deep", maxDepth)}
			}
			n.Kind, n.Tag = yaml.MappingNode, "!!map"
			if v == '[' {
				n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
			}
		case string:
			n.Tag, n.Value, n.Style = "!!str", v, yaml.DoubleQuotedStyle
		case json.Number:
			n.Tag, n.Value = "!!int", string(v)
			if strings.ContainsAny(string(v), ".eE") || len(strings.TrimPrefix(string(v), "-")) > 18 {
				n.Tag = "!!float" // a fraction, an exponent, or maybe beyond int64
			}
		case bool:
			n.Tag, n.Value = "!!bool", fmt.Sprint(v)
		case nil:
			n.Tag, n.Value = "!!null", "null"
		}
		if len(stack) == 0 {
			root = n
		} else {
			top := stack[len(stack)-1]
			top.Content = append(top.Content, n)
		}
		if n.Kind != yaml.ScalarNode {
			stack = append(stack, n)
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		what := map[yaml.Kind]string{yaml.MappingNode: "object", yaml.SequenceNode: "array", yaml.ScalarNode: "value"}[root.Kind]
		return nil, &Error{Line: lineAt(dec.InputOffset()), Err: fmt.Errorf("unexpected data after the JSON %s", what)}
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: root.Line, Content: []*yaml.Node{root}}, nil
}

// pathOf is the path of the value that comes next inside the open objects
// and arrays of stack, built only for an error.
func pathOf(stack []*yaml.Node) string {
	path := ""
	for i, n := range stack {
		c := len(n.Content)
		if i < len(stack)-1 {
			c-- // the open child is already in its parent's Content
		}
		if n.Kind == yaml.SequenceNode {
			path = Index(path, c)
		} else if c%2 == 1 {
			path = Key(path, n.Content[c-1].Value)
		}
	}
	return path
}
