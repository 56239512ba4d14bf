package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
)

// vectorFiles are the ledger's shared test vectors (policy/testdata/book).
func vectorFiles(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "policy", "testdata", "book", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	return paths
}

type vectorFile struct {
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
}

func readVector(t testing.TB, path string) vectorFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// sameJSON reports whether two flat JSON objects have the same keys in the
// same order and the same values (numbers compared as numbers).
func sameJSON(t *testing.T, got, want []byte) {
	t.Helper()
	keys := func(data []byte) ([]string, map[string]any) {
		dec := json.NewDecoder(bytes.NewReader(data))
		if _, err := dec.Token(); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		var ks []string
		vs := map[string]any{}
		for dec.More() {
			k, _ := dec.Token()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k.(string))
			vs[k.(string)] = v
		}
		return ks, vs
	}
	gk, gv := keys(got)
	wk, wv := keys(want)
	if strings.Join(gk, " ") != strings.Join(wk, " ") {
		t.Fatalf("keys %v, want %v", gk, wk)
	}
	for _, k := range wk {
		if gv[k] != wv[k] {
			t.Errorf("%s = %v, want %v", k, gv[k], wv[k])
		}
	}
}

func TestBookVectorsViaStdin(t *testing.T) {
	for _, path := range vectorFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			v := readVector(t, path)
			r := runOK(t, &env{}, string(v.Input), "book")
			if strings.Count(r.stdout, "\n") != 1 || !strings.HasSuffix(r.stdout, "\n") {
				t.Fatalf("want one line of JSON, got %q", r.stdout)
			}
			sameJSON(t, []byte(r.stdout), v.Expected)
		})
	}
}

func TestBookWithPolicyFile(t *testing.T) {
	fx := newFixture(t, "UTC")
	f := policy.File{Hour: "2026-11-30T14", Timezone: "UTC", Basis: policy.BasisLive, Lanes: []policy.Lane{}, Classes: []policy.Class{
		{Name: "interactive", DeadlineS: 60, CeilingTokens: 4000, EstTokens: 800, Lanes: []string{"paid"},
			Book: policy.BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 35, NextGenS: 12, NextEstTokens: 800, PaidQueueS: 2, PaidUSDPer1k: 0.002, FreeEligible: true, PaidEligible: true}},
		{Name: "ineligible", DeadlineS: 600, CeilingTokens: 4000, EstTokens: 800, Lanes: []string{"paid"},
			Book: policy.BookPolicy{DeadlineS: 600, CeilingTokens: 4000, NextQueueS: 35, NextGenS: 12, NextEstTokens: 800, PaidQueueS: 2, PaidUSDPer1k: 0.002, FreeEligible: false, PaidEligible: true}},
	}}
	data, err := policy.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(fx.dir, "2026-11-30T14.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	attempts := `{"attempts": [{"queue_s": 35, "gen_s": 9, "emitted_tokens": 220, "shipped": false}]}`
	for _, tc := range []struct {
		class, want string
	}{
		// Vector 02 with the policy from the file.
		{"interactive", `{"action":"cut_over","why":"free retry does not fit; one paid attempt does","spent_s":44,"remaining_s":16,"spent_tokens":220,"projected_tokens":1020,"sunk_usd_if_those_tokens_were_paid":0.0004}`},
		// Vector 01's numbers, but the hour marks the free lane ineligible.
		{"ineligible", `{"action":"cut_over","why":"the free lane is not eligible this hour; one paid attempt fits","spent_s":44,"remaining_s":556,"spent_tokens":220,"projected_tokens":1020,"sunk_usd_if_those_tokens_were_paid":0.0004}`},
	} {
		t.Run(tc.class, func(t *testing.T) {
			r := runOK(t, &env{}, attempts, "book", "-policy", path, "-class", tc.class)
			if r.stdout != tc.want+"\n" {
				t.Fatalf("got  %s\nwant %s", r.stdout, tc.want)
			}
		})
	}
	t.Run("policy on stdin too", func(t *testing.T) {
		v := readVector(t, vectorFiles(t)[0])
		r := (&env{}).exec(t, string(v.Input), "book", "-policy", path, "-class", "interactive")
		if r.code != 1 || !strings.Contains(r.stderr, "policy: not allowed: the book comes from") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

const goodPolicy = `"policy": {"deadline_s": 60, "ceiling_tokens": 4000, "next_queue_s": 35, "next_gen_s": 12, "next_est_tokens": 800, "paid_queue_s": 2, "paid_usd_per_1k": 0.002}`

func TestBookBadInput(t *testing.T) {
	att := func(a string) string { return `{"attempts": [` + a + `], ` + goodPolicy + `}` }
	good := `{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`
	pol := func(p string) string { return `{"attempts": [], "policy": {` + p + `}}` }
	fullPol := `"deadline_s": 60, "ceiling_tokens": 4000, "next_queue_s": 35, "next_gen_s": 12, "next_est_tokens": 800, "paid_queue_s": 2, "paid_usd_per_1k": 0.002`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "input: empty"},
		{"not JSON", "attempts: []", "input: not valid JSON"},
		{"truncated", `{"attempts": [`, "the JSON ends early"},
		{"not an object", `[1, 2]`, "input: must be an object"},
		{"trailing data", att("") + " {}", "unexpected data after the JSON object"},
		{"missing attempts", `{` + goodPolicy + `}`, "attempts: missing"},
		{"missing policy", `{"attempts": []}`, "policy: missing"},
		{"unknown top field", `{"attempts": [], ` + goodPolicy + `, "note": 1}`, "note: unknown field"},
		{"odd key is quoted", `{"attempts": [], ` + goodPolicy + `, "a\nb": 1}`, `"a\nb": unknown field`},
		{"repeated field", `{"attempts": [], "attempts": [], ` + goodPolicy + `}`, "attempts: repeated field"},
		{"attempts not an array", `{"attempts": {}, ` + goodPolicy + `}`, "attempts: must be an array"},
		{"attempts null", `{"attempts": null, ` + goodPolicy + `}`, "attempts: must be an array"},
		{"attempt not an object", att(`1`), "attempts[0]: must be an object"},
		{"negative queue", att(good + `, {"queue_s": -1, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`), "attempts[1].queue_s: must be >= 0"},
		{"missing gen_s", att(`{"queue_s": 1, "emitted_tokens": 1, "shipped": false}`), "attempts[0].gen_s: missing"},
		{"missing shipped", att(`{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1}`), "attempts[0].shipped: missing"},
		{"unknown attempt field", att(`{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1, "shipped": false, "lane": "free"}`), "attempts[0].lane: unknown field"},
		{"case matters", att(`{"Queue_S": 1, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`), "attempts[0].Queue_S: unknown field"},
		{"string number", att(`{"queue_s": "1", "gen_s": 1, "emitted_tokens": 1, "shipped": false}`), "attempts[0].queue_s: must be a number"},
		{"null number", att(`{"queue_s": null, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`), "attempts[0].queue_s: must be a number"},
		{"object number", att(`{"queue_s": {}, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`), "attempts[0].queue_s: must be a number"},
		{"overflowing number", att(`{"queue_s": 1e400, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`), "attempts[0].queue_s: must be a finite number"},
		{"huge seconds", att(`{"queue_s": 1e10, "gen_s": 1, "emitted_tokens": 1, "shipped": false}`), "attempts[0].queue_s: must be at most 1000000000"},
		{"fractional tokens", att(`{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1.5, "shipped": false}`), "attempts[0].emitted_tokens: must be a whole number"},
		{"negative tokens", att(`{"queue_s": 1, "gen_s": 1, "emitted_tokens": -3, "shipped": false}`), "attempts[0].emitted_tokens: must be >= 0"},
		{"huge tokens", att(`{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1e300, "shipped": false}`), "attempts[0].emitted_tokens: must be at most 1000000000000"},
		{"shipped as string", att(`{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1, "shipped": "no"}`), "attempts[0].shipped: must be true or false"},
		{"missing policy field", pol(strings.Replace(fullPol, `"next_gen_s": 12, `, "", 1)), "policy.next_gen_s: missing"},
		{"negative deadline", pol(strings.Replace(fullPol, `"deadline_s": 60`, `"deadline_s": -60`, 1)), "policy.deadline_s: must be >= 0"},
		{"negative price", pol(strings.Replace(fullPol, `0.002`, `-0.002`, 1)), "policy.paid_usd_per_1k: must be >= 0"},
		{"unknown policy field", pol(fullPol + `, "retries": 3`), "policy.retries: unknown field"},
		{"eligible as number", pol(fullPol + `, "free_eligible": 1`), "policy.free_eligible: must be true or false"},
		{"lane as number", pol(fullPol + `, "free_lane": 1`), "policy.free_lane: must be a string or null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := (&env{}).exec(t, tc.in, "book")
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and one line with %q", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		r := (&env{}).exec(t, strings.Repeat(" ", policy.MaxBookInput+1), "book")
		if r.code != 1 || !strings.Contains(r.stderr, "larger than") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

func TestBookOptionalPolicyFields(t *testing.T) {
	fullPol := `"deadline_s": 60, "ceiling_tokens": 4000, "next_queue_s": 35, "next_gen_s": 12, "next_est_tokens": 800, "paid_queue_s": 2, "paid_usd_per_1k": 0.002`
	for _, tc := range []struct {
		name, extra string
		want        policy.Action
	}{
		{"defaults: both eligible", ``, policy.RetryFree},
		{"free not eligible", `, "free_eligible": false`, policy.CutOver},
		{"neither eligible", `, "free_eligible": false, "paid_eligible": false`, policy.Stop},
		{"lanes named", `, "free_lane": "free", "paid_lane": null`, policy.RetryFree},
		{"whole numbers in other spellings", `, "free_eligible": true`, policy.RetryFree},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := `{"attempts": [{"queue_s": 1, "gen_s": 1, "emitted_tokens": 1e2, "shipped": false}], "policy": {` + fullPol + tc.extra + `}}`
			r := runOK(t, &env{}, in, "book")
			var d struct {
				Action      policy.Action `json:"action"`
				SpentTokens int           `json:"spent_tokens"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
				t.Fatal(err)
			}
			if d.Action != tc.want || d.SpentTokens != 100 {
				t.Fatalf("got %+v, want %s", d, tc.want)
			}
		})
	}
}

// A policy file is input too: every number of the class's book is bounded
// before the ledger sees it, and the error names the field.
func TestBookPolicyFileBounds(t *testing.T) {
	dir := t.TempDir()
	good := policy.BookPolicy{DeadlineS: 60, CeilingTokens: 4000, NextQueueS: 35, NextGenS: 12, NextEstTokens: 800, PaidQueueS: 2, PaidUSDPer1k: 0.002, FreeEligible: true, PaidEligible: true}
	attempts := `{"attempts": [{"queue_s": 35, "gen_s": 9, "emitted_tokens": 220, "shipped": false}]}`
	for _, tc := range []struct {
		name string
		edit func(*policy.BookPolicy)
		want string
	}{
		// It used to wrap to a negative projection and answer retry_free.
		// The schema holds the bounds; the error has the line.
		{"huge next_est_tokens", func(b *policy.BookPolicy) { b.NextEstTokens = math.MaxInt64 }, "line 34: classes[1].book.next_est_tokens: must be at most 1000000000000"},
		{"huge ceiling", func(b *policy.BookPolicy) { b.CeilingTokens = policy.MaxTokens + 1 }, "line 31: classes[1].book.ceiling_tokens: must be at most 1000000000000"},
		{"huge deadline", func(b *policy.BookPolicy) { b.DeadlineS = 1e300 }, "line 30: classes[1].book.deadline_s: must be at most 1000000000"},
		{"huge paid queue", func(b *policy.BookPolicy) { b.PaidQueueS = 2e9 }, "line 35: classes[1].book.paid_queue_s: must be at most 1000000000"},
		{"huge price", func(b *policy.BookPolicy) { b.PaidUSDPer1k = 1e7 }, "line 36: classes[1].book.paid_usd_per_1k: must be at most 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := good
			tc.edit(&b)
			f := policy.File{Hour: "2026-11-30T14", Timezone: "UTC", Basis: policy.BasisLive, Lanes: []policy.Lane{}, Classes: []policy.Class{
				{Name: "interactive", Lanes: []string{}, Book: good},
				{Name: "batch", Lanes: []string{}, Book: b},
			}}
			data, err := policy.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			// The whole file is refused, whichever class is asked for.
			for _, class := range []string{"batch", "interactive"} {
				r := (&env{}).exec(t, attempts, "book", "-policy", path, "-class", class)
				if r.code != 1 || r.stdout != "" || r.stderr != "policygen: "+path+": policy file: "+tc.want+"\n" {
					t.Fatalf("-class %s: exit %d, stdout %q, stderr %q; want 1 and %q", class, r.code, r.stdout, r.stderr, tc.want)
				}
			}
		})
	}
	t.Run("unknown class lists the classes", func(t *testing.T) {
		data, err := policy.Marshal(policy.File{Hour: "2026-11-30T14", Timezone: "UTC", Basis: policy.BasisLive, Classes: []policy.Class{{Name: "interactive", Book: good}, {Name: "batch", Book: good}}})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "two.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r := (&env{}).exec(t, attempts, "book", "-policy", path, "-class", "nope")
		want := "policygen: " + path + `: class "nope": not in the policy file for 2026-11-30T14 (classes: interactive, batch)` + "\n"
		if r.code != 1 || r.stderr != want {
			t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
		}
	})
}

// A -policy file is read as the API reads one: with a cap (a file past
// 1 MiB is an error, not all of it in memory), and only when it is a
// regular file: /dev/zero, which never ends, and a named pipe without a
// writer, whose open used to block until SIGINT, are refused at once.
func TestBookPolicyFileCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#\n"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "policy.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{big, "larger than 1048576 bytes"},
		{"/dev/zero", "not a regular file (a character device)"},
		{fifo, "not a regular file (a named pipe)"},
	} {
		done := make(chan result, 1)
		go func() {
			done <- (&env{}).exec(t, `{"attempts": []}`, "book", "-policy", tc.path, "-class", "interactive")
		}()
		select {
		case r := <-done:
			if want := "policygen: policy file " + tc.path + ": " + tc.want + "\n"; r.code != 1 || r.stderr != want {
				t.Errorf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("reading %s did not stop", tc.path)
		}
	}
}

// SIGINT/SIGTERM cancel ctx: book returns promptly even while stdin
// blocks forever.
func TestBookInterrupted(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close() // never written: stdin stays open
	defer pr.Close()
	for _, tc := range []struct {
		name  string
		stdin io.Reader
		args  []string
		want  string
	}{
		{"stdin never closes", pr, []string{"book"}, "input: interrupted while reading (context canceled)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var out, errb bytes.Buffer
			e := &env{stdin: tc.stdin, stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }}
			done := make(chan error, 1)
			go func() { done <- e.run(ctx, tc.args) }()
			time.Sleep(50 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("returned before the cancel: %v", err)
			default:
			}
			cancel()
			select {
			case err := <-done:
				if err == nil || err.Error() != tc.want || out.Len() != 0 {
					t.Fatalf("err %v, stdout %q; want %q", err, out.String(), tc.want)
				}
				if code := exitCode(err, &errb); code != 1 {
					t.Errorf("exit %d, want 1", code)
				}
			case <-time.After(time.Second):
				t.Fatal("book did not return within a second of the cancel")
			}
		})
	}
}
