package decode

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// YAML parses the first document of data into a node tree (an empty
// DocumentNode for none); more reports whether another follows. A syntax
// error is an *Error at the first line where the document up to it fails
// the same way, not the start of the enclosing block that yaml.v3 names.
func YAML(data []byte) (doc *yaml.Node, more bool, err error) {
	doc = &yaml.Node{Kind: yaml.DocumentNode}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(doc); errors.Is(err, io.EOF) {
		return &yaml.Node{Kind: yaml.DocumentNode}, false, nil
	} else if err != nil {
		line, msg := yamlMessage(err)
		if line > 0 {
			line = failingLine(data, line, msg)
		}
		return nil, false, &Error{Line: line, Err: errors.New("not valid YAML: " + msg)}
	}
	var next yaml.Node
	return doc, dec.Decode(&next) == nil, nil
}

// yamlMessage splits a yaml.v3 error into its line (0: none) and message.
func yamlMessage(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return 0, msg
	}
	line, _ := strconv.Atoi(m[1])
	return line, m[2]
}

// failingLine returns the first line k >= from (from >= 1) at which the
// first k lines of data fail with msg (bisected); else from.
func failingLine(data []byte, from int, msg string) int {
	ends := []int{} // ends[i]: the length of the first i+1 lines
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	fails := func(k int) bool { // the first k lines fail with msg
		var n yaml.Node
		err := yaml.Unmarshal(data[:ends[k-1]], &n)
		if err == nil {
			return false
		}
		_, m := yamlMessage(err)
		return m == msg
	}
	// Search has seen the first k lines fail (k <= len(ends)) and, for k > from, the first k-1 not;
	// it searches nothing when from > len(ends).
	k := from + sort.Search(len(ends)-from+1, func(i int) bool { return fails(from + i) })
	if k > len(ends) {
		return from
	}
	return k
}
