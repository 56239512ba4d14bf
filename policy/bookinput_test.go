package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const goodBookPolicy = `"policy": {"deadline_s": 60, "ceiling_tokens": 4000, "next_queue_s": 35, "next_gen_s": 12, "next_est_tokens": 800, "paid_queue_s": 2, "paid_usd_per_1k": 0.002}`

// rawVectorInputs returns the "input" of each file of testdata/book as
// written.
func rawVectorInputs(t testing.TB) [][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "book", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	var out [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, v.Input)
	}
	return out
}

// The shared vectors decode to what their plain JSON says.
func TestDecodeBookInputVectors(t *testing.T) {
	for name, v := range loadVectors(t) {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(v.Input)
			if err != nil {
				t.Fatal(err)
			}
			in, err := DecodeBookInput(raw, true)
			if err != nil {
				t.Fatal(err)
			}
			as, p := v.args()
			if len(as) == 0 {
				as = []Attempt{}
			}
			if !reflect.DeepEqual(in, BookInput{Attempts: as, Policy: p}) {
				t.Fatalf("got %+v\nwant %+v %+v", in, as, p)
			}
		})
	}
}

// An attempt's optional error says it ended in an error; absent or null,
// it did not (the shared vectors have no such key and keep their answers).
func TestDecodeBookInputAttemptError(t *testing.T) {
	for _, tc := range []struct {
		field string
		want  bool
		err   string
	}{
		{"", false, ""},
		{`, "error": null`, false, ""},
		{`, "error": false`, false, ""},
		{`, "error": true`, true, ""},
		{`, "error": "yes"`, false, "attempts[0].error: "},
	} {
		in, err := DecodeBookInput([]byte(`{"attempts": [{"queue_s": 1, "gen_s": 0, "emitted_tokens": 0, "shipped": false`+tc.field+`}]}`), false)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.field, err, tc.err)
			}
		case err != nil || in.Attempts[0].Error != tc.want:
			t.Errorf("%q: %+v, %v; want error %v", tc.field, in.Attempts, err, tc.want)
		}
	}
}

// Errors name the line and the field, in input spread over lines as in one.
func TestDecodeBookInputErrorLines(t *testing.T) {
	good := `{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"bound", "{\n\"attempts\": [\n" + good + ",\n{\"queue_s\": -1, \"gen_s\": 1, \"emitted_tokens\": 1, \"shipped\": false}\n],\n" + goodBookPolicy + "}",
			"line 4: attempts[1].queue_s: must be >= 0"},
		{"type", "{\"attempts\": [],\n" + strings.Replace(goodBookPolicy, `"deadline_s": 60`, `"deadline_s": "60"`, 1) + "}",
			`line 2: policy.deadline_s: must be a number`},
		{"unknown", "{\"attempts\": [],\n\n\"atempts\": 1}", `line 3: atempts: unknown field`},
		{"repeated", "{\"attempts\": [],\n\"attempts\": []}", "line 2: attempts: repeated field"},
		{"missing", "{\"attempts\": [\n{\"queue_s\": 1}]}", "line 2: attempts[0].gen_s: missing"},
		{"syntax", "{\"attempts\": [\n\n1,,]}", "line 3: attempts[1]: not valid JSON at byte 18"},
		{"too many attempts", `{"attempts": [` + strings.Repeat(good+",", MaxAttempts) + good + `]}`, "attempts[1000]: more than 1000 attempts"},
		{"too deep", `{"attempts": ` + strings.Repeat("[", 2000), "nested more than 1000 deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeBookInput([]byte(tc.in), tc.name == "bound" || tc.name == "type")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzBookInput: the decoder never panics, its errors are one line naming a
// field, and what it accepts encoding/json accepts with the same values and
// the ledger answers with finite numbers.
func FuzzBookInput(f *testing.F) {
	for _, raw := range rawVectorInputs(f) {
		f.Add(raw)
	}
	f.Add([]byte(`{"attempts": [{"queue_s": -0, "gen_s": 1e9, "emitted_tokens": 1e12, "shipped": true}], ` + goodBookPolicy + `}`))
	f.Add([]byte(`{"attempts": [], "policy": {"deadline_s": 1, "free_eligible": false, "paid_lane": null}}`))
	f.Add([]byte(`{"attempts": [{"queue_s": 1, "queue_s": 2}]}`))
	f.Add([]byte(`{"attempts": [{"queue_s": 1, "gen_s": 0, "emitted_tokens": 0, "shipped": false, "error": true}], ` + goodBookPolicy + `}`))
	f.Add([]byte(`{"a\u0000b": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DecodeBookInput(data, true)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("error on more than one line: %q", err)
			}
			return
		}
		var ref struct {
			Attempts []struct {
				QueueS        float64 `json:"queue_s"`
				GenS          float64 `json:"gen_s"`
				EmittedTokens int     `json:"emitted_tokens"`
				Shipped       bool    `json:"shipped"`
				Error         *bool   `json:"error"`
			} `json:"attempts"`
			Policy struct {
				DeadlineS     float64 `json:"deadline_s"`
				CeilingTokens int     `json:"ceiling_tokens"`
				NextQueueS    float64 `json:"next_queue_s"`
				NextGenS      float64 `json:"next_gen_s"`
				NextEstTokens float64 `json:"next_est_tokens"`
				PaidQueueS    float64 `json:"paid_queue_s"`
				PaidUSDPer1k  float64 `json:"paid_usd_per_1k"`
				FreeEligible  *bool   `json:"free_eligible"`
				PaidEligible  *bool   `json:"paid_eligible"`
				FreeLane      *string `json:"free_lane"`
				PaidLane      *string `json:"paid_lane"`
			} `json:"policy"`
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ref); err != nil {
			// encoding/json wants whole numbers as plain integers (no
			// 1e3 or 800.0) for int fields: only that may differ.
			if !strings.Contains(err.Error(), "cannot unmarshal number") {
				t.Fatalf("accepted what encoding/json rejects: %v\n%s", err, data)
			}
		} else {
			if len(ref.Attempts) != len(in.Attempts) {
				t.Fatalf("attempts: %d vs %d", len(in.Attempts), len(ref.Attempts))
			}
			for i, a := range ref.Attempts {
				if b := in.Attempts[i]; a.QueueS != b.QueueS || a.GenS != b.GenS || a.EmittedTokens != b.EmittedTokens || a.Shipped != b.Shipped ||
					b.Error != (a.Error != nil && *a.Error) {
					t.Fatalf("attempt %d: %+v vs %+v", i, b, a)
				}
			}
			if p := in.Policy; p.DeadlineS != ref.Policy.DeadlineS || p.PaidUSDPer1k != ref.Policy.PaidUSDPer1k || p.FreeEligible != (ref.Policy.FreeEligible == nil || *ref.Policy.FreeEligible) {
				t.Fatalf("policy: %+v vs %+v", p, ref.Policy)
			}
		}
		d := Book(in.Attempts, in.Policy)
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("ledger answer does not encode: %v (%+v)", err, d)
		}
		var back map[string]any
		if err := json.Unmarshal(out, &back); err != nil || len(back) != 7 {
			t.Fatalf("bad output %s: %v", out, err)
		}
		if math.IsInf(d.SpentS, 0) || math.IsInf(d.RemainingS, 0) || math.IsInf(d.SunkUSD, 0) {
			t.Fatalf("non-finite answer %+v", d)
		}
	})
}

// Counts in the ledger's input are whole numbers in [0, MaxTokens]
// (docs/ledger.md, "Input is read strictly"): `800.0` and `1e3` are whole
// and read as 800 and 1000, MaxTokens itself is read as MaxTokens; a
// fractional count (2.5) is an error naming it even though it is finite
// and in bounds, and MaxTokens + 1 is out of bounds.
// (bookinput.go count: `!num.Finite(x) || x != math.Trunc(x)` → `&&`,
// which reads 2.5 as 2; the clamp's `MaxTokens+1` → `MaxTokens-1`, which
// reads MaxTokens as MaxTokens - 1 and MaxTokens + 1 as MaxTokens - 1.)
func TestDecodeBookInputCounts(t *testing.T) {
	in := func(tokens string) []byte {
		return []byte(`{"attempts": [{"queue_s": 1, "gen_s": 1, "emitted_tokens": ` + tokens + `, "shipped": false}]}`)
	}
	for _, tc := range []struct {
		tokens string
		want   int
		err    string
	}{
		{"800", 800, ""},
		{"800.0", 800, ""},
		{"1e3", 1000, ""},
		{"1000000000000", MaxTokens, ""},
		{"2.5", 0, "attempts[0].emitted_tokens: must be a whole number"},
		{"1000000000001", 0, "attempts[0].emitted_tokens: must be at most 1000000000000"},
		{"1e300", 0, "attempts[0].emitted_tokens: must be at most 1000000000000"},
	} {
		got, err := DecodeBookInput(in(tc.tokens), false)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.tokens, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.tokens, err)
		case len(got.Attempts) != 1 || got.Attempts[0].EmittedTokens != tc.want:
			t.Errorf("%s: attempts %+v, want emitted_tokens %d", tc.tokens, got.Attempts, tc.want)
		}
	}
}

// The ledger reads at most MaxAttempts attempts (docs/ledger.md, the
// bounds table: "at most 1,000"): exactly 1,000 are read, 1,001 are an
// error (TestDecodeBookInputErrorLines).
// (bookinput.go: `case len(doc.Attempts) > MaxAttempts` → `>=`.)
func TestDecodeBookInputAtMostMaxAttempts(t *testing.T) {
	good := `{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`
	in := `{"attempts": [` + strings.Repeat(good+",", MaxAttempts-1) + good + `]}`
	got, err := DecodeBookInput([]byte(in), false)
	if err != nil || len(got.Attempts) != MaxAttempts {
		t.Fatalf("%d attempts, %v; want %d", len(got.Attempts), err, MaxAttempts)
	}
}

// cutover_after_s and free_first go together (docs/ledger.md); when one is
// given without the other, the error names the one that is missing.
// (bookinput.go: `if p.CutoverAfterS == nil` → `!=`, which names the one
// given.)
func TestDecodeBookInputCutoverNamesTheMissingKey(t *testing.T) {
	pol := strings.TrimSuffix(goodBookPolicy, "}")
	for _, tc := range []struct{ extra, want string }{
		{`, "free_first": true}`, "policy.cutover_after_s: missing: cutover_after_s and free_first go together"},
		{`, "cutover_after_s": 20}`, "policy.free_first: missing: cutover_after_s and free_first go together"},
	} {
		_, err := DecodeBookInput([]byte(`{"attempts": [], `+pol+tc.extra+`}`), true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.extra, err, tc.want)
		}
	}
}
