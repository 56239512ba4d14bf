package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// PolicyJSON converts a policy file, which policy.ParseFile has accepted,
// node by node into JSON, keeping the key order (docs/api.md).
func PolicyJSON(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, errors.New("policy file: empty")
	}
	var b bytes.Buffer
	if err := writeJSON(&b, doc.Content[0], 0); err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// maxJSONDepth bounds nesting; a policy file is 4 deep.
const maxJSONDepth = 32

func writeJSON(b *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > maxJSONDepth {
		return errors.New("nested too deep")
	}
	switch n.Kind {
	case yaml.AliasNode:
		return writeJSON(b, n.Alias, depth+1)
	case yaml.MappingNode, yaml.SequenceNode:
		open, end, step := byte('['), byte(']'), 1
		if n.Kind == yaml.MappingNode {
			open, end, step = '{', '}', 2
		}
		b.WriteByte(open)
		for i := 0; i+step <= len(n.Content); i += step {
			if i > 0 {
				b.WriteByte(',')
			}
			if k := n.Content[i]; step == 2 {
				if k.Kind == yaml.AliasNode {
					k = k.Alias
				}
				writeString(b, k.Value)
				b.WriteByte(':')
			}
			if err := writeJSON(b, n.Content[i+step-1], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(end)
		return nil
	}
	switch n.ShortTag() {
	case "!!null", "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: not a finite number", n.Line)
		}
		b.Write(out)
		return nil
	}
	writeString(b, n.Value)
	return nil
}

func writeString(b *bytes.Buffer, s string) { b.Write(bytes.TrimSuffix(JSON(s), []byte("\n"))) }
