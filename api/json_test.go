package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lanewatch/lanewatch/policy"
)

// randomFile is a policy file with random lanes, classes and figures.
func randomFile(r *rand.Rand) policy.File {
	f := policy.File{Records: r.IntN(100), Hour: "2026-03-29T02", Timezone: "UTC", Basis: []string{policy.BasisLive, policy.BasisForecast}[r.IntN(2)]}
	if r.IntN(3) == 0 {
		f.Sites = []string{"fra1", "iad"}[:1+r.IntN(2)]
	}
	secs := func() float64 { return float64(r.IntN(100000)) / 100 }
	var names []string
	for i := range r.IntN(4) {
		l := policy.Lane{Name: fmt.Sprintf("lane-%d", i), Kind: []string{"free", "paid"}[r.IntN(2)], NextQueueS: secs(), TokPerS: secs(),
			Samples: r.IntN(50), Failures: r.IntN(3), Reason: policy.ReasonOK, Eligible: true}
		if r.IntN(2) == 0 {
			l.LastSample = time.Date(2026, 3, 29, 1, r.IntN(60), r.IntN(60), 0, time.UTC)
		}
		if r.IntN(4) == 0 {
			l.Eligible, l.Reason, l.Until = false, policy.ReasonQuotaExhausted, time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
		}
		f.Lanes = append(f.Lanes, l)
		names = append(names, l.Name)
	}
	for i := range r.IntN(3) {
		c := policy.Class{Name: fmt.Sprintf("class_%d", i), DeadlineS: secs(), CeilingTokens: r.IntN(9000), EstTokens: r.IntN(900),
			Lanes: names[:r.IntN(len(names)+1)],
			Book: policy.BookPolicy{DeadlineS: secs(), CeilingTokens: r.IntN(9000), NextQueueS: secs(), NextGenS: secs(), NextEstTokens: r.IntN(900),
				PaidQueueS: secs(), PaidUSDPer1k: float64(r.IntN(1000)) / 10000, FreeEligible: r.IntN(2) == 0, PaidEligible: r.IntN(2) == 0}}
		if len(names) > 0 && r.IntN(2) == 0 {
			c.Book.FreeLane, c.Book.PaidLane = names[0], names[len(names)-1]
		}
		f.Classes = append(f.Classes, c)
	}
	return f
}

// For any file: the JSON is what the file holds (ParseFile reads the same
// File back from it, JSON being YAML), in the file's key order, and it
// validates against the policy schema.
func TestPolicyJSONMirrorsTheFile(t *testing.T) {
	sch := policySchema(t)
	r := rand.New(rand.NewPCG(20, 23))
	for i := range 300 {
		f := randomFile(r)
		data, err := policy.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := policy.ParseFile(data)
		if err != nil {
			t.Fatalf("file %d: %v\n%s", i, err, data)
		}
		js, err := PolicyJSON(data)
		if err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		got, err := policy.ParseFile(js)
		if err != nil {
			t.Fatalf("file %d: the JSON does not read back: %v\n%s", i, err, js)
		}
		want.Records = 0 // the header comment is not in the JSON
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("file %d: JSON reads back as\n%+v\nwant\n%+v", i, got, want)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Fatalf("file %d: %v\n%s", i, err, js)
		}
		if got, want := keyOrder(js), keyOrderYAML(data); got != want {
			t.Fatalf("file %d: keys in the JSON\n%s\nin the file\n%s", i, got, want)
		}
	}
}

// keyOrder lists the object keys of a JSON document in order.
func keyOrder(js []byte) string {
	var keys []string
	var walk func(dec *json.Decoder)
	walk = func(dec *json.Decoder) {
		tok, _ := dec.Token()
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, _ := dec.Token()
				keys = append(keys, k.(string))
				walk(dec)
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				walk(dec)
			}
			_, _ = dec.Token()
		}
	}
	walk(json.NewDecoder(bytes.NewReader(js)))
	return strings.Join(keys, " ")
}

// keyOrderYAML lists the keys of a file Marshal wrote, in order.
func keyOrderYAML(data []byte) string {
	var keys []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(line, " "), "- "), " ")
		if k, _, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") && !strings.ContainsAny(k, ` "`) {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, " ")
}

// Aliases are expanded, numbers keep YAML's reading, and what is not a
// policy file's value never reaches the JSON.
func TestPolicyJSONValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a: &x [1, 2.5]\nb: *x\n", `{"a":[1,2.5],"b":[1,2.5]}`},
		{"n: null\nt: true\ns: \"2026-11-30T14\"\nu: plain <&>\n", `{"n":null,"t":true,"s":"2026-11-30T14","u":"plain <&>"}`},
		{"h: 0x10\ne: 1e3\nz: -0.0\n", `{"h":16,"e":1000,"z":-0}`},
	} {
		got, err := PolicyJSON([]byte(tc.in))
		if err != nil || string(got) != tc.want+"\n" {
			t.Errorf("%q: %s (%v), want %s", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "a: .inf\n"} {
		if _, err := PolicyJSON([]byte(in)); err == nil {
			t.Errorf("%q: want an error", in)
		}
	}
}

// For any file, Choose runs a class on its first lane, falls back to the
// book's paid lane exactly when the book has an eligible one, and says
// why when the class has no lane.
func TestChooseRule(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 500 {
		f := randomFile(r)
		var eps []Lane
		for _, l := range f.Lanes {
			eps = append(eps, Lane{Lane: l.Name, Kind: l.Kind, API: "openai", BaseURL: "http://" + l.Name + "/v1", Model: "m", APIKeyEnv: "K_" + l.Name})
		}
		for _, c := range f.Classes {
			ch, err := Choose(f, c.Name, eps)
			if len(c.Lanes) == 0 {
				var nl *NoLaneError
				if !errors.As(err, &nl) || nl.Why == "" {
					t.Fatalf("file %d class %s: %v, want a NoLaneError", i, c.Name, err)
				}
				continue
			}
			if err != nil || ch.Lane.Lane != c.Lanes[0] || ch.BaseURL != "http://"+c.Lanes[0]+"/v1" || ch.Hour != f.Hour || ch.Class != c.Name {
				t.Fatalf("file %d class %s: %+v %v", i, c.Name, ch, err)
			}
			wantFallback := c.Book.PaidLane != "" && c.Book.PaidEligible
			if (ch.Fallback != nil) != wantFallback || wantFallback && ch.Fallback.Lane != c.Book.PaidLane {
				t.Fatalf("file %d class %s: fallback %+v, book %+v", i, c.Name, ch.Fallback, c.Book)
			}
			if ch.CutoverAfterS != nil {
				t.Fatalf("file %d: a cut-over time from a file that has none", i)
			}
		}
		if _, err := Choose(f, "no-such-class", eps); err == nil || !strings.Contains(err.Error(), `class "no-such-class": not in the policy file`) {
			t.Fatalf("file %d: unknown class: %v", i, err)
		}
	}
}
