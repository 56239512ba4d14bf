package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"math"
	"time"

	"github.com/lanewatch/lanewatch/store"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

func TestMarshalRoundTrip(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "golden", "*.yaml"))
	if err != nil || len(paths) < 5 {
		t.Fatalf("golden files: %v %v", paths, err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := ParseFile(data)
			if err != nil {
				t.Fatal(err)
			}
			if f.Records == 0 {
				t.Error("Records not read from the header")
			}
			again, err := Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, data) {
				t.Fatalf("Marshal(ParseFile(x)) != x:\n%s", again)
			}
		})
	}
	t.Run("ForHour value", func(t *testing.T) {
		p, recs, h := utcScenario(t)
		f := forHour(p, recs, h)
		data, err := Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseFile(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, f) {
			t.Fatalf("round trip\n got %+v\nwant %+v", back, f)
		}
	})
}

func TestMarshalQuotesAmbiguousStrings(t *testing.T) {
	// Names follow the schema's pattern ([A-Za-z0-9_.-]+, which ParseFile
	// holds them to); the timezone, which has none, takes the colon.
	f := File{Hour: "2026-01-01T00", Timezone: "a: b", Basis: BasisLive, Classes: []Class{}, Lanes: []Lane{
		{Name: "yes", Kind: "free", Eligible: true, Reason: ReasonOK},
		{Name: "1e3", Kind: "free", Eligible: true, Reason: ReasonOK},
		{Name: "-1", Kind: "free", Eligible: true, Reason: ReasonOK},
		{Name: "null", Kind: "free", Eligible: true, Reason: ReasonOK},
		{Name: ".inf", Kind: "free", Eligible: true, Reason: ReasonOK},
	}}
	data, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseFile(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if back.Timezone != f.Timezone {
		t.Errorf("timezone %q came back as %q", f.Timezone, back.Timezone)
	}
	for i, l := range back.Lanes {
		if l.Name != f.Lanes[i].Name {
			t.Errorf("name %q came back as %q", f.Lanes[i].Name, l.Name)
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "golden", "utc_live.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"unknown key", "basis: live\n", "basis: live\nextra: 1\n", "line 5: extra: unknown key"},
		{"missing book key", "      next_gen_s: 26.67\n", "", "classes[0].book.next_gen_s: missing"},
		{"missing lane key", "    failures: 1\n", "", "lanes[1].failures: missing"},
		{"negative", "next_queue_s: 6\n", "next_queue_s: -6\n", "lanes[1].next_queue_s: must be >= 0"},
		{"bad reason", "reason: probe_failed", "reason: flaky", "lanes[1].reason: must be"},
		{"bad basis", "basis: live", "basis: guess", "basis: must be live or forecast"},
		{"bad hour", `hour: "2026-11-30T14"`, `hour: "2026-11-30 14h"`, "hour: want YYYY-MM-DDTHH"},
		{"bad last_sample", `"2026-11-30T11:47:03Z"`, `"yesterday"`, "lanes[3].last_sample: want an RFC 3339 time"},
		{"not a number", "tok_per_s: 30\n", "tok_per_s: fast\n", `lanes[0].tok_per_s: want a number, got "fast"`},
		{"infinite", "tok_per_s: 30\n", "tok_per_s: .inf\n", "lanes[0].tok_per_s: must be a finite number"},
		{"two documents", "basis: live\n", "basis: live\n---\nhour: x\n", "more than one YAML document"},
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
		})
	}
	t.Run("paid_eligible absent means true", func(t *testing.T) {
		old := strings.ReplaceAll(string(good), "      paid_eligible: true\n", "")
		f, err := ParseFile([]byte(old))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := f.Book("interactive"); !b.PaidEligible {
			t.Fatal("paid_eligible should default to true")
		}
	})
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := os.Open("policy.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	doc, err := jsonschema.UnmarshalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("policy.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("policy.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// yamlToJSON turns a YAML document into the values jsonschema validates.
func yamlToJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func TestSchema(t *testing.T) {
	sch := compileSchema(t)
	paths, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.yaml"))
	if len(paths) == 0 {
		t.Fatal("no golden files")
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(yamlToJSON(t, data)); err != nil {
				t.Fatalf("%s does not validate: %v", p, err)
			}
		})
	}
	good, err := os.ReadFile(filepath.Join("testdata", "golden", "utc_live.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"missing book key", "      next_gen_s: 26.67\n", ""},
		{"unknown key", "basis: live\n", "basis: live\nextra: 1\n"},
		{"bad basis", "basis: live", "basis: guess"},
		{"bad reason", "reason: probe_failed", "reason: flaky"},
		{"eligible but not ok", "    eligible: false\n    reason: probe_failed", "    eligible: true\n    reason: probe_failed"},
		{"negative seconds", "next_queue_s: 6\n", "next_queue_s: -6\n"},
		{"fractional count", "samples: 9\n", "samples: 9.5\n"},
		{"bad hour", `hour: "2026-11-30T14"`, `hour: "2026-11-30T24"`},
		{"hour as a number", `hour: "2026-11-30T14"`, `hour: 2026`},
		{"bad last_sample", `"2026-11-30T11:47:03Z"`, `"2026-11-30 11:47"`},
		{"lanes not a list", "lanes: [paid, paid-slow]", "lanes: paid"},
	} {
		t.Run("broken/"+tc.name, func(t *testing.T) {
			bad := strings.Replace(string(good), tc.from, tc.to, 1)
			if bad == string(good) {
				t.Fatalf("fixture: %q not found", tc.from)
			}
			if err := sch.Validate(yamlToJSON(t, []byte(bad))); err == nil {
				t.Fatal("a broken file validates")
			}
		})
	}
}

// A policy file's sites read back as written (docs/policy.md: `sites`,
// the sites whose records the figures come from): a file of two sites
// parses to those two, and ParseFile(Marshal(f)) is f. A file with no
// sites (the key absent, or an empty list) has none: nil, as ForHour
// gives for untagged records.
// (yaml.go parseFile: `len(doc.Sites) > 0` → `<= 0`, which drops the
// sites, and → `>= 0`, which reads `sites: []` as an empty non-nil list.)
func TestParseFileSites(t *testing.T) {
	h := mtHour
	p := Params{LookbackDays: 1, Lanes: []LaneSpec{{Name: "a", Kind: KindFree}}}
	f := ForHour(p, []store.Hourly{mtRec("a", KindFree, "iad1", h, 1, 40, 0), mtRec("a", KindFree, "fra1", h.Add(-24*time.Hour), 2, 40, 0)}, nil, h)
	data, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\nsites: [fra1, iad1]\n") {
		t.Fatalf("no sites line in\n%s", data)
	}
	got, err := ParseFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Sites, []string{"fra1", "iad1"}) || !reflect.DeepEqual(got, f) {
		t.Errorf("sites %q; ParseFile(Marshal(f)) = %+v, want %+v", got.Sites, got, f)
	}
	empty := strings.Replace(string(data), "\nsites: [fra1, iad1]\n", "\nsites: []\n", 1)
	if got, err := ParseFile([]byte(empty)); err != nil || got.Sites != nil {
		t.Errorf("sites: []: %q (nil: %v), %v; want nil", got.Sites, got.Sites == nil, err)
	}
}

// Marshal refuses a non-finite figure, naming the first one.
func TestMarshalRejectsNonFinite(t *testing.T) {
	f := File{Hour: "2026-11-30T14", Timezone: "UTC", Basis: BasisLive,
		Lanes:   []Lane{{Name: "a", Kind: KindFree, Reason: ReasonOK, NextQueueS: math.NaN(), TokPerS: math.Inf(1)}},
		Classes: []Class{{Name: "c", DeadlineS: 60, Book: BookPolicy{NextGenS: math.Inf(-1)}}}}
	if data, err := Marshal(f); err == nil || err.Error() != "lanes[0].next_queue_s: NaN is not a finite number" {
		t.Errorf("err %v, want the first non-finite figure named\n%s", err, data)
	}
	f.Lanes[0].NextQueueS, f.Lanes[0].TokPerS = 1, 2
	if _, err := Marshal(f); err == nil || err.Error() != "classes[0].book.next_gen_s: -Inf is not a finite number" {
		t.Errorf("err %v, want classes[0].book.next_gen_s", err)
	}
}

// A count out of bounds is an error naming its field and line (the edited
// line of utc_live.yaml), and the first error
// of a file is the one reported (yaml.go's `p.err == nil` → `!= nil` let a
// negative count through, and let a later error replace the first).
func TestParseFileCountErrors(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "golden", "utc_live.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(string) string
		want string
	}{
		{"negative samples", func(s string) string { return strings.Replace(s, "samples: 24\n", "samples: -1\n", 1) },
			"policy file: line 12: lanes[0].samples: must be >= 0"},
		{"failures past MaxTokens", func(s string) string { return strings.Replace(s, "failures: 1\n", "failures: 1000000000001\n", 1) },
			"policy file: line 22: lanes[1].failures: must be at most 1000000000000"},
		{"negative ceiling", func(s string) string {
			return strings.Replace(s, "    ceiling_tokens: 4000\n", "    ceiling_tokens: -4000\n", 1)
		},
			"policy file: line 72: classes[0].ceiling_tokens: must be >= 0"},
		{"negative next_est_tokens", func(s string) string {
			return strings.Replace(s, "      next_est_tokens: 800\n", "      next_est_tokens: -1\n", 1)
		}, "policy file: line 80: classes[0].book.next_est_tokens: must be >= 0"},
		{"the first of two count errors", func(s string) string {
			s = strings.Replace(s, "samples: 24\n", "samples: -1\n", 1)
			return strings.Replace(s, "failures: 1\n", "failures: -1\n", 1)
		}, "policy file: line 12: lanes[0].samples: must be >= 0"},
		{"a missing key before a count error", func(s string) string {
			s = strings.Replace(s, "basis: live\n", "", 1)
			return strings.Replace(s, "samples: 24\n", "samples: -1\n", 1)
		}, "policy file: line 2: basis: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := tc.edit(string(good))
			if bad == string(good) {
				t.Fatal("fixture unchanged")
			}
			if _, err := ParseFile([]byte(bad)); err == nil || err.Error() != tc.want {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
