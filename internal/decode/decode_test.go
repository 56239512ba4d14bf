package decode

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type inner struct {
	N    int      `yaml:"n"`
	X    float64  `yaml:"x"`
	Name *string  `yaml:"name"`
	Tags []string `yaml:"tags"`
}

type doc struct {
	Title string  `yaml:"title"`
	On    bool    `yaml:"on"`
	Items []inner `yaml:"items"`
}

// Decode refuses, with the field and its line, what yaml.v3 would refuse
// without the field or let by, and decodes the rest as yaml.v3 does.
func TestDecode(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"ok", "title: t\nitems:\n  - {n: 1, x: 1.5, tags: [a]}\n", ""},
		{"unknown", "title: t\ntitel: u\n", `line 2: titel: unknown key (did you mean "title"?)`},
		{"unknown, nothing near", "title: t\ncolour: u\n", `line 2: colour: unknown key`},
		{"repeated", "title: t\ntitle: u\n", "line 2: title: key repeated (first set on line 1)"},
		{"fraction for an integer", "title: t\nitems: [{n: 1.5}]\n", `line 2: items[0].n: want an integer, got "1.5"`},
		{"string for an integer", "items:\n  - n: \"1\"\n", `line 2: items[0].n: want an integer, got "1"`},
		{"list for a string", "title: [a]\n", `line 1: title: want a string, got a list`},
		{"mapping for a list", "items: {n: 1}\n", `line 1: items: want a list, got a mapping`},
		{"scalar for a mapping", "items: [x]\n", `line 1: items[0]: want a mapping, got "x"`},
		{"not a bool", "on: maybe\n", `line 1: on: want true or false, got "maybe"`},
		{"null keeps the default", "title: t\non: null\n", ""},
		{"root", "- 1\n", "line 1: want a mapping, got a list"},
		{"odd key quoted", "title: t\n\"a\\nb\": 1\n", `line 2: "a\nb": unknown key`},
		{"mapping as key", "{a: 1}: 2\n", `line 1: want a plain key, got a mapping`},
		{"alias cycle", "items: &a [*a]\n", "line 1: items[0]: an alias refers to a value that holds it"},
		{"merge cycle", "items:\n  - &m {n: 1, <<: *m}\n", "line 2: items[0]: merges a mapping into itself"},
		{"merge of a scalar", "items:\n  - {<<: [{n: 1}, 3]}\n", `line 2: items[0]."<<": want a mapping or a list of mappings, got "3"`},
		{"unknown key merged in", "items:\n  - {<<: {nn: 1}}\n", `line 2: items[0].nn: unknown key (did you mean "n"?)`},
		{"overridden merged value unchecked", "items:\n  - {<<: {n: x}, n: 1}\n", ""},
		{"alias at the line of its use", "items:\n  - tags: &t [a]\n  - name: *t\n", "line 3: items[1].name: want a string, got a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var root yaml.Node
			if err := yaml.Unmarshal([]byte(tc.src), &root); err != nil {
				t.Fatal(err)
			}
			var v doc
			_, err := Decode(&root, &v)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			var de *Error
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("error is %T, want *Error", err)
			}
			var ref doc // what yaml.v3 alone makes of an accepted document
			if err == nil && (yaml.Unmarshal([]byte(tc.src), &ref) != nil || !reflect.DeepEqual(v, ref)) {
				t.Fatalf("decoded %+v, yaml.v3 %+v", v, ref)
			}
		})
	}
}

// Merges expand as in yaml.v3 until they pass 100000 mappings.
func TestDecodeAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("items:\n  - &l0 {n: 1}\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&b, "  - &l%d {<<: [%s]}\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(b.String()), &root); err != nil {
		t.Fatal(err)
	}
	_, err := Decode(&root, &doc{})
	if err == nil || !strings.Contains(err.Error(), "aliases expand to more than 100000 mappings") {
		t.Fatalf("err %v", err)
	}
}

// Lines finds the line of a field, or of the nearest enclosing one set.
func TestDecodeLines(t *testing.T) {
	src := "title: t\nitems:\n  - n: 1\n    x: 2\n  - n: 3\n"
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(src), &root); err != nil {
		t.Fatal(err)
	}
	lines, err := Decode(&root, &doc{})
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]int{"title": 1, "items": 2, "items[0].x": 4, "items[1]": 5, "items[1].x": 5, "nope": 0} {
		if got := lines.Line(field); got != want {
			t.Errorf("Line(%q) = %d, want %d", field, got, want)
		}
	}
	if _, ok := lines["items[1].x"]; ok {
		t.Error("items[1].x is not set")
	}
}

func TestJSONErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"empty", "", "no JSON value"},
		{"syntax", "{\n\"a\": [1,,2]}", "line 2: a[1]: not valid JSON at byte 10"},
		{"ends early", `{"a": [1`, "a[1]: the JSON ends early"},
		{"trailing", `{} {}`, "unexpected data after the JSON object"},
		{"trailing array", `[] 1`, "unexpected data after the JSON array"},
		{"too many", `[1, 2, 3, 4, 5]`, "more than 4 JSON values"},
		{"too deep", strings.Repeat("[", 1001), "nested more than 1000 deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := JSON([]byte(tc.src), 4)
			if tc.name == "too deep" {
				_, err = JSON([]byte(tc.src), 1e6)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// The JSON tree carries each scalar's JSON type as its tag.
func TestJSONTags(t *testing.T) {
	n, err := JSON([]byte(`{"s": "1", "i": -2, "f": 1e3, "u": 12345678901234567890, "b": true, "z": null}`), 100)
	if err != nil {
		t.Fatal(err)
	}
	m := n.Content[0]
	want := []string{"!!str", "!!int", "!!float", "!!float", "!!bool", "!!null"}
	for i := range want {
		if got := m.Content[2*i+1].ShortTag(); got != want[i] {
			t.Errorf("%s: tag %s, want %s", m.Content[2*i].Value, got, want[i])
		}
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct{ path, key, want string }{
		{"", "a", "a"},
		{"lanes[0]", "base_url", "lanes[0].base_url"},
		{"", "a b", `"a b"`},
		{"x", strings.Repeat("é", 50), `x."` + strings.Repeat("é", 37) + `..."`},
	} {
		if got := Key(tc.path, tc.key); got != tc.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.path, tc.key, got, tc.want)
		}
	}
}

// Schema refuses what a JSON value cannot be, fast: a cycle of aliases, an
// alias bomb, a number that is not finite.
func TestSchemaInstance(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"alias cycle", "a: &a [*a]\n", "line 1: a[0]: an alias refers to a node that holds it"},
		{"alias bomb", "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n", "aliases expand to more than 100000 values"},
		{"infinite", "a: [1, .inf]\n", "line 1: a[1]: must be a finite number"},
		{"repeated key", "a: 1\na: 2\n", "line 2: a: key repeated (first set on line 1)"},
		{"deep", "a: " + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + "\n", "nested more than 1000 deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, _, err := YAML([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			err = Schema(nil, doc, SchemaOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 200 {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// fits, the shortcut past a yaml.v3 decoder for each scalar, never says a
// scalar decodes into a type that yaml.v3 refuses it for, plain or tagged
// as JSON tags it.
func TestFitsAgreesWithYAML(t *testing.T) {
	types := []reflect.Type{reflect.TypeFor[string](), reflect.TypeFor[bool](), reflect.TypeFor[int](), reflect.TypeFor[int64](), reflect.TypeFor[float64]()}
	values := []string{"", "-", "0", "-12", "007", "1_000", "0x1F", "0o17", "123456789012345678", "1234567890123456789", "99999999999999999999",
		"1.5", "-0.25", "1e3", "1E+2", "1e400", ".inf", "-.Inf", ".nan", "inf", "NaN", "true", "false", "True", "yes", "t", "1", "abc", "2026-01-01"}
	for _, v := range values {
		for _, tag := range []string{"", "!!str", "!!int", "!!float", "!!bool"} {
			n := &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
			for _, typ := range types {
				if fits(n, typ) && n.Decode(reflect.New(typ).Interface()) != nil {
					t.Errorf("fits(%q tagged %q, %s), which yaml.v3 refuses", v, tag, typ)
				}
			}
		}
	}
}

// Line finds a field by its path of keys and indices, or its nearest
// enclosing field.
func TestLine(t *testing.T) {
	doc, err := JSON([]byte("{\"a\": [\n{\"b\": 1},\n{\"b\": 2,\n\"c\": 3}]}"), 100)
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]int{"a": 1, "a[0].b": 2, "a[1].c": 4, "a[1].nope": 3, "a[7]": 1, "": 1} {
		if got := Line(doc, field); got != want {
			t.Errorf("Line(%q) = %d, want %d", field, got, want)
		}
	}
}
