package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/lanewatch/lanewatch/internal/num"
	"github.com/lanewatch/lanewatch/policy"
)

// Bounds on book input. The bounds on its numbers are policy.MaxSeconds,
// policy.MaxTokens and policy.MaxUSDPer1k, shared with the -policy reader.
const (
	maxBookInput  = 8 << 20 // bytes of stdin
	maxPolicyFile = 1 << 20 // bytes of a policy file (book -policy, lane)
	maxAttempts   = 10000
)

// readCapped reads what open returns to its end, at most limit bytes, and
// closes it. More than limit bytes is an error, "<what>: larger than N
// bytes"; other errors are "<what>: err" (a *fs.PathError shown without its
// path, which what already names). It returns as soon as ctx is done, even
// while open or a read blocks (stdin that never closes, a FIFO without a
// writer): the reading goroutine is then left behind until its read returns,
// which is fine for a command that is about to exit.
func readCapped(ctx context.Context, what string, limit int64, open func() (io.ReadCloser, error)) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rc, err := open()
		if err != nil {
			done <- result{nil, err}
			return
		}
		data, err := io.ReadAll(io.LimitReader(rc, limit+1))
		_ = rc.Close() // read-only: nothing to lose
		done <- result{data, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done: // finished at the same moment: take it
		default:
			return nil, fmt.Errorf("%s: interrupted while reading (%w)", what, context.Cause(ctx))
		}
	}
	if r.err != nil {
		var pe *fs.PathError
		if errors.As(r.err, &pe) {
			r.err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", what, r.err)
	}
	if int64(len(r.data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", what, limit)
	}
	return r.data, nil
}

// readFileCapped is readCapped on a file; the open happens in the reading
// goroutine too, since opening a FIFO blocks.
func readFileCapped(ctx context.Context, what, path string, limit int64) ([]byte, error) {
	return readCapped(ctx, what, limit, func() (io.ReadCloser, error) { return os.Open(path) })
}

// bookInput is the decoded stdin of `policygen book`.
type bookInput struct {
	Attempts []policy.Attempt
	Policy   policy.BookPolicy
}

// decodeBookInput decodes {"attempts": [...], "policy": {...}} strictly:
// every field of the test vectors is required, unknown or repeated fields are
// rejected, numbers must be finite, >= 0 and in range, counts must be whole.
// The optional policy fields free_eligible and paid_eligible default to true,
// free_lane and paid_lane to "". With withPolicy false the input is
// {"attempts": [...]} alone. Errors name the field: "attempts[1].queue_s:
// must be >= 0".
func decodeBookInput(data []byte, withPolicy bool) (bookInput, error) {
	var in bookInput
	if len(bytes.TrimSpace(data)) == 0 {
		return in, errors.New(`input: empty; want {"attempts": [...], "policy": {...}}`)
	}
	d := &jsonReader{dec: json.NewDecoder(bytes.NewReader(data))}
	d.dec.UseNumber()
	required := []string{"attempts", "policy"}
	if !withPolicy {
		required = required[:1]
	}
	err := d.object("", required, func(key, path string) error {
		switch {
		case key == "attempts":
			in.Attempts = []policy.Attempt{}
			return d.array(path, func(i int, path string) error {
				if i >= maxAttempts {
					return fmt.Errorf("%s: more than %d attempts", path, maxAttempts)
				}
				var a policy.Attempt
				err := d.object(path, []string{"queue_s", "gen_s", "emitted_tokens", "shipped"}, func(key, path string) error {
					var err error
					switch key {
					case "queue_s":
						a.QueueS, err = d.number(path, policy.MaxSeconds)
					case "gen_s":
						a.GenS, err = d.number(path, policy.MaxSeconds)
					case "emitted_tokens":
						a.EmittedTokens, err = d.count(path)
					case "shipped":
						a.Shipped, err = d.bool(path)
					default:
						return unknownField(path)
					}
					return err
				})
				in.Attempts = append(in.Attempts, a)
				return err
			})
		case key == "policy" && withPolicy:
			in.Policy = policy.BookPolicy{FreeEligible: true, PaidEligible: true}
			p := &in.Policy
			return d.object(path, []string{"deadline_s", "ceiling_tokens", "next_queue_s", "next_gen_s", "next_est_tokens", "paid_queue_s", "paid_usd_per_1k"}, func(key, path string) error {
				var err error
				switch key {
				case "deadline_s":
					p.DeadlineS, err = d.number(path, policy.MaxSeconds)
				case "ceiling_tokens":
					p.CeilingTokens, err = d.count(path)
				case "next_queue_s":
					p.NextQueueS, err = d.number(path, policy.MaxSeconds)
				case "next_gen_s":
					p.NextGenS, err = d.number(path, policy.MaxSeconds)
				case "next_est_tokens":
					p.NextEstTokens, err = d.count(path)
				case "paid_queue_s":
					p.PaidQueueS, err = d.number(path, policy.MaxSeconds)
				case "paid_usd_per_1k":
					p.PaidUSDPer1k, err = d.number(path, policy.MaxUSDPer1k)
				case "free_eligible":
					p.FreeEligible, err = d.bool(path)
				case "paid_eligible":
					p.PaidEligible, err = d.bool(path)
				case "free_lane":
					p.FreeLane, err = d.nullableString(path)
				case "paid_lane":
					p.PaidLane, err = d.nullableString(path)
				default:
					return unknownField(path)
				}
				return err
			})
		case key == "policy":
			return errors.New("policy: not allowed with -policy (the policy comes from the file)")
		default:
			return unknownField(path)
		}
	})
	if err != nil {
		return bookInput{}, err
	}
	if _, err := d.dec.Token(); !errors.Is(err, io.EOF) {
		return bookInput{}, errors.New("input: unexpected data after the JSON object")
	}
	return in, nil
}

// jsonReader walks a JSON document token by token.
type jsonReader struct{ dec *json.Decoder }

func unknownField(path string) error { return fmt.Errorf("%s: unknown field", path) }

// name returns the path of key under path; keys that are not plain are
// quoted, so an error stays on one line.
func name(path, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if !plain {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func (j *jsonReader) token(path string) (json.Token, error) {
	tok, err := j.dec.Token()
	if err != nil {
		if path == "" {
			path = "input"
		}
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%s: not valid JSON at byte %d: %w", path, se.Offset, err)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("%s: the JSON ends early", path)
		}
		return nil, fmt.Errorf("%s: not valid JSON: %w", path, err)
	}
	return tok, nil
}

// object reads an object at path; field reads the value of each key. A key
// seen twice, or a required key never seen, is an error.
func (j *jsonReader) object(path string, required []string, field func(key, path string) error) error {
	where := path
	if where == "" {
		where = "input"
	}
	tok, err := j.token(path)
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%s: must be an object", where)
	}
	var seen []string
	for j.dec.More() {
		tok, err := j.token(path)
		if err != nil {
			return err
		}
		key := tok.(string) // json.Decoder only yields strings as keys
		kp := name(path, key)
		if slices.Contains(seen, key) {
			return fmt.Errorf("%s: repeated field", kp)
		}
		seen = append(seen, key)
		if err := field(key, kp); err != nil {
			return err
		}
	}
	if _, err := j.token(path); err != nil { // '}'
		return err
	}
	for _, k := range required {
		if !slices.Contains(seen, k) {
			return fmt.Errorf("%s: missing", name(path, k))
		}
	}
	return nil
}

// array reads an array at path; item reads each element.
func (j *jsonReader) array(path string, item func(i int, path string) error) error {
	tok, err := j.token(path)
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("%s: must be an array", path)
	}
	for i := 0; j.dec.More(); i++ {
		if err := item(i, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	_, err = j.token(path) // ']'
	return err
}

// scalar reads a value that must not be an object or array.
func (j *jsonReader) scalar(path, want string) (json.Token, error) {
	tok, err := j.token(path)
	if err != nil {
		return nil, err
	}
	if _, ok := tok.(json.Delim); ok {
		return nil, fmt.Errorf("%s: must be %s", path, want)
	}
	return tok, nil
}

// number reads a finite number in [0, limit] (policy.CheckNumber).
func (j *jsonReader) number(path string, limit float64) (float64, error) {
	tok, err := j.scalar(path, "a number")
	if err != nil {
		return 0, err
	}
	n, ok := tok.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s: must be a number", path)
	}
	x, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, fmt.Errorf("%s: must be a finite number", path)
	}
	if err := policy.CheckNumber(path, x, limit); err != nil {
		return 0, err
	}
	return x, nil
}

// count reads a whole number in [0, policy.MaxTokens] (1e3 and 800.0 are
// whole).
func (j *jsonReader) count(path string) (int, error) {
	tok, err := j.scalar(path, "a whole number")
	if err != nil {
		return 0, err
	}
	n, ok := tok.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s: must be a whole number", path)
	}
	x, err := strconv.ParseFloat(string(n), 64)
	switch {
	case err != nil || !num.Finite(x) || x != math.Trunc(x):
		return 0, fmt.Errorf("%s: must be a whole number", path)
	}
	// Clamped first so that the conversion is defined; the check then
	// reports -1 and MaxTokens+1 as out of bounds.
	c := int64(math.Max(-1, math.Min(x, policy.MaxTokens+1)))
	if err := policy.CheckCount(path, c); err != nil {
		return 0, err
	}
	return int(c), nil
}

func (j *jsonReader) bool(path string) (bool, error) {
	tok, err := j.scalar(path, "true or false")
	if err != nil {
		return false, err
	}
	b, ok := tok.(bool)
	if !ok {
		return false, fmt.Errorf("%s: must be true or false", path)
	}
	return b, nil
}

func (j *jsonReader) nullableString(path string) (string, error) {
	tok, err := j.scalar(path, "a string or null")
	if err != nil {
		return "", err
	}
	switch v := tok.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("%s: must be a string or null", path)
}
