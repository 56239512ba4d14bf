package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The schema ParseFile checks against holds the bounds and names the code
// has: a change to one without the other fails here.
func TestSchemaMatchesCode(t *testing.T) {
	var s struct {
		Properties struct {
			Basis struct {
				Enum []string `json:"enum"`
			} `json:"basis"`
		} `json:"properties"`
		Defs map[string]struct {
			Maximum    *float64 `json:"maximum"`
			Properties map[string]struct {
				Enum    []string `json:"enum"`
				Maximum *float64 `json:"maximum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(SchemaJSON, &s); err != nil {
		t.Fatal(err)
	}
	max := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"basis", s.Properties.Basis.Enum, []string{BasisLive, BasisForecast}},
		{"lane reason", s.Defs["lane"].Properties["reason"].Enum, Reasons},
		{"lane kind", s.Defs["lane"].Properties["kind"].Enum, []string{KindFree, KindPaid}},
		{"seconds maximum", max(s.Defs["seconds"].Maximum), float64(MaxSeconds)},
		{"count maximum", max(s.Defs["count"].Maximum), float64(MaxTokens)},
		{"tok_per_s maximum", max(s.Defs["lane"].Properties["tok_per_s"].Maximum), float64(MaxSeconds)},
		{"paid_usd_per_1k maximum", max(s.Defs["book"].Properties["paid_usd_per_1k"].Maximum), float64(MaxUSDPer1k)},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: schema has %v, code %v", c.what, c.got, c.want)
		}
	}
	disk, err := os.ReadFile("policy.schema.json")
	if err != nil || string(disk) != string(SchemaJSON) {
		t.Fatalf("SchemaJSON is not policy/policy.schema.json (%v)", err)
	}
}

// ParseFile refuses what the schema refuses, each with the line and field.
func TestParseFileSchemaRules(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "golden", "utc_live.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sch := compileSchema(t)
	for _, tc := range []struct{ name, from, to, want string }{
		{"eligible but not ok", "    eligible: false\n    reason: probe_failed", "    eligible: true\n    reason: probe_failed", "lanes[1].reason: must be ok"},
		{"until without quota_exhausted", "    last_sample: \"2026-11-30T11:47:03Z\"\n", "    last_sample: \"2026-11-30T11:47:03Z\"\n    until: \"2026-11-30T12:00:00Z\"\n", "lanes[3]: not allowed here"},
		{"fractional count", "samples: 9\n", "samples: 9.5\n", `lanes[1].samples: want an integer, got "9.5"`},
		{"hour out of range", `hour: "2026-11-30T14"`, `hour: "2026-11-30T24"`, `line 2: hour: want YYYY-MM-DDTHH, got "2026-11-30T24"`},
		{"hour not in the calendar", `hour: "2026-11-30T14"`, `hour: "2026-02-30T14"`, `line 2: hour: want YYYY-MM-DDTHH, got "2026-02-30T14"`},
		{"hour as a number", `hour: "2026-11-30T14"`, `hour: 2026`, `line 2: hour: want a string, got "2026"`},
		{"lanes not a list", "lanes: [paid, paid-slow]", "lanes: paid", `classes[0].lanes: want a list, got "paid"`},
		{"bad lane name", "lanes: [paid, paid-slow]", "lanes: [paid, \"paid slow\"]", `classes[0].lanes[1]: want [A-Za-z0-9_.-]+, got "paid slow"`},
		{"repeated key", "basis: live\n", "basis: live\nbasis: live\n", "line 5: basis: key repeated (first set on line 4)"},
		{"empty timezone", "timezone: UTC", `timezone: ""`, "line 3: timezone: must not be empty"},
		{"no document", string(good), "", "empty document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(good), tc.from, tc.to, 1)
			if bad == string(good) {
				t.Fatalf("fixture: %q not found", tc.from)
			}
			_, err := ParseFile([]byte(bad))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("error on more than one line: %q", err)
			}
			// Whatever ParseFile refuses on the schema's grounds, the
			// schema refuses too (the calendar check is ParseFile's own).
			if tc.name != "hour not in the calendar" && tc.name != "no document" && tc.name != "repeated key" {
				if err := sch.Validate(yamlToJSON(t, []byte(bad))); err == nil {
					t.Fatal("the schema accepts it")
				}
			}
		})
	}
}

// FuzzParseFile: ParseFile never panics, its errors are one line, and a
// file it accepts Marshal writes so that it reads back the same.
func FuzzParseFile(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.yaml"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("hour: \"2026-01-01T00\"\ntimezone: UTC\nbasis: live\nlanes: []\nclasses: []\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseFile(data)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("error on more than one line: %q", err)
			}
			return
		}
		out, err := Marshal(file)
		if err != nil {
			t.Fatalf("accepted a file Marshal refuses: %v", err)
		}
		back, err := ParseFile(out)
		if err != nil {
			t.Fatalf("Marshal wrote what ParseFile refuses: %v\n%s", err, out)
		}
		again, err := Marshal(back)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not stable: %v\n%s\n%s", err, out, again)
		}
	})
}
