package decode

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type inner struct {
	N    int      `yaml:"n" decode:"required"`
	X    float64  `yaml:"x"`
	Name *string  `yaml:"name"`
	Tags []string `yaml:"tags"`
}

type doc struct {
	Title string  `yaml:"title" decode:"required"`
	On    bool    `yaml:"on"`
	Items []inner `yaml:"items"`
}

func TestDecodeYAMLAndJSON(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		json      bool
		want      string // error text; "" for none
	}{
		{"yaml ok", "title: t\nitems:\n  - {n: 1, x: 1.5}\n", false, ""},
		{"json ok", `{"title": "t", "items": [{"n": 1, "x": 1.5, "name": null}]}`, true, ""},
		{"yaml missing", "title: t\nitems:\n  - x: 1\n", false, "line 3: items[0].n: missing"},
		{"json missing", "{\"title\": \"t\",\n\"items\": [\n{\"x\": 1}]}", true, "line 3: items[0].n: missing"},
		{"yaml unknown", "title: t\ntitel: u\n", false, `line 2: titel: unknown key (did you mean "title"?)`},
		{"json unknown", "{\"title\": \"t\",\n \"titel\": 1}", true, "line 2: titel: unknown field"},
		{"yaml repeated", "title: t\ntitle: u\n", false, "line 2: title: key repeated (first set on line 1)"},
		{"json repeated", `{"title": "t", "title": "u"}`, true, "line 1: title: repeated field"},
		{"yaml type", "title: t\nitems: [{n: 1.5}]\n", false, `line 2: items[0].n: want an integer, got "1.5"`},
		{"json type", `{"title": "t", "items": [{"n": "1"}]}`, true, "line 1: items[0].n: must be an integer"},
		{"json string is not a number", `{"title": "t", "items": [{"n": 1, "x": "1"}]}`, true, "line 1: items[0].x: must be a number"},
		{"json number is not a string", `{"title": 1}`, true, "line 1: title: must be a string"},
		{"json number is not a bool", `{"title": "t", "on": 1}`, true, "line 1: on: must be true or false"},
		{"json null only for pointers", `{"title": null}`, true, "line 1: title: must be a string"},
		{"json nullable", `{"title": "t", "items": [{"n": 1, "name": 2}]}`, true, "line 1: items[0].name: must be a string or null"},
		{"yaml null keeps the default", "title: t\non: null\n", false, ""},
		{"json root", `[1]`, true, "line 1: input: must be an object"},
		{"yaml root", "- 1\n", false, "line 1: input: want a mapping, got a list"},
		{"odd key quoted", "title: t\n\"a\\nb\": 1\n", false, `line 2: "a\nb": unknown key`},
		{"json huge number is kept", `{"title": "t", "items": [{"n": 1, "x": 1e400}]}`, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var root *yaml.Node
			if tc.json {
				n, err := JSON([]byte(tc.src), 1000)
				if err != nil {
					t.Fatal(err)
				}
				root = n
			} else {
				root = &yaml.Node{}
				if err := yaml.Unmarshal([]byte(tc.src), root); err != nil {
					t.Fatal(err)
				}
			}
			var v doc
			err := New(Options{JSON: tc.json, Root: "input"}).Decode(root, &v)
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
		})
	}
}

// A list that holds itself through an alias is an error, not a stack
// overflow.
func TestDecodeAliasCycle(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("a: &a [*a]\n"), &root); err != nil {
		t.Fatal(err)
	}
	var v struct {
		A [][][]any `yaml:"a"`
	}
	err := New(Options{}).Decode(&root, &v)
	if err == nil || err.Error() != "line 1: a[0]: an alias refers to a list that holds it" {
		t.Fatalf("err %v", err)
	}
}

// Line finds the line of a field, or of the nearest enclosing one set.
func TestDecoderLine(t *testing.T) {
	src := "title: t\nitems:\n  - n: 1\n    x: 2\n  - n: 3\n"
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(src), &root); err != nil {
		t.Fatal(err)
	}
	d := New(Options{})
	var v doc
	if err := d.Decode(&root, &v); err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]int{"title": 1, "items": 2, "items[0].x": 4, "items[1]": 5, "items[1].x": 5, "nope": 0} {
		if got := d.Line(field); got != want {
			t.Errorf("Line(%q) = %d, want %d", field, got, want)
		}
	}
	if !d.Set("items[0].x") || d.Set("items[1].x") {
		t.Error("Set: wrong")
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
	n, err := JSON([]byte(`{"s": "1", "i": -2, "f": 1e3, "b": true, "z": null}`), 100)
	if err != nil {
		t.Fatal(err)
	}
	m := n.Content[0]
	want := []string{"!!str", "!!int", "!!float", "!!bool", "!!null"}
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
