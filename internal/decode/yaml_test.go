package decode

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// A syntax error is reported at the line where the document stops parsing,
// not where yaml.v3 says (the start of the enclosing block).
func TestYAMLErrorLine(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		yamlV3    string // what yaml.v3 says
		want      string
	}{
		{"indent in a list item", "timezone: UTC\nlanes:\n  - name: a\n    kind: free\n   api: openai\n",
			"yaml: line 2: did not find expected '-' indicator", "line 5: not valid YAML: did not find expected '-' indicator"},
		{"already right", "a:\n  b: 1\n    c: 2\n",
			"yaml: line 3: mapping values are not allowed in this context", "line 3: not valid YAML: mapping values are not allowed in this context"},
		{"unclosed flow", "a: [1,\n  2\nb: 3\n",
			"yaml: line 2: did not find expected ',' or ']'", "line 2: not valid YAML: did not find expected ',' or ']'"},
		{"tab", "lanes:\n\t- a\n", "yaml: line 2: found character that cannot start any token", "line 2: not valid YAML: found character that cannot start any token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tc.src), &n); err == nil || err.Error() != tc.yamlV3 {
				t.Fatalf("yaml.v3 says %v, the test expects %q", err, tc.yamlV3)
			}
			_, _, err := YAML([]byte(tc.src))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("documents", func(t *testing.T) {
		doc, more, err := YAML([]byte("a: 1\n---\nb: 2\n"))
		if err != nil || !more || len(doc.Content) != 1 {
			t.Fatalf("doc %v, more %v, err %v", doc, more, err)
		}
		doc, more, err = YAML(nil)
		if err != nil || more || len(doc.Content) != 0 {
			t.Fatalf("empty: doc %v, more %v, err %v", doc, more, err)
		}
	})
	t.Run("large file stays fast", func(t *testing.T) {
		src := "a:\n" + strings.Repeat("  - x: 1\n", 50000) + " b: 2\n"
		if _, _, err := YAML([]byte(src)); err == nil || !strings.HasPrefix(err.Error(), "line 50002: ") {
			t.Fatalf("err %v", err)
		}
	})
}
