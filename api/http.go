package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// Options configure Handler.
type Options struct {
	Folder Folder
	Lanes  []Lane           // the configured lanes, for the endpoints of the answers
	Now    func() time.Time // nil: time.Now
}

// Handler serves the read-only JSON API (docs/api.md, docs/openapi.yaml):
//
//	GET  /api/v1/policy[?hour=H]           the hour's policy file as JSON
//	GET  /api/v1/lane?class=NAME[&hour=H]   the lane to run on, with the fallback
//	GET  /api/v1/next?class=NAME            the first hour from now on the class fits
//	POST /api/v1/book?class=NAME[&hour=H]   the retry ledger on the hour's book
//
// H is YYYY-MM-DDTHH in the folder's zone, by default the current hour.
// Errors are {"error": "...", "code": "..."} with status 400, 404, 405, 413
// or 503. It reads policy files only: nothing it serves probes or writes.
func Handler(opts Options) http.Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &server{opts}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/policy", only(http.MethodGet, s.policy))
	mux.HandleFunc("/api/v1/lane", only(http.MethodGet, s.lane))
	mux.HandleFunc("/api/v1/next", only(http.MethodGet, s.next))
	mux.HandleFunc("/api/v1/book", only(http.MethodPost, s.book))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fail(http.StatusNotFound, "not_found", "no such path %q (paths: /api/v1/policy, /api/v1/lane, /api/v1/next, /api/v1/book)", r.URL.Path))
	})
	return mux
}

type server struct{ opts Options }

// apiError is an answer that is an error.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func fail(status int, code, format string, args ...any) *apiError {
	return &apiError{status, code, fmt.Sprintf(format, args...)}
}

// only serves h for method (GET also answers HEAD), 405 otherwise; an
// error that is no *apiError is a 503.
func only(method string, h func(*http.Request) ([]byte, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && (method != http.MethodGet || r.Method != http.MethodHead) {
			w.Header().Set("Allow", method)
			writeError(w, fail(http.StatusMethodNotAllowed, "method_not_allowed", "%s %s: use %s", r.Method, r.URL.Path, method))
			return
		}
		body, err := h(r)
		var ae *apiError
		if err != nil && !errors.As(err, &ae) {
			ae = &apiError{http.StatusServiceUnavailable, "unavailable", err.Error()}
		}
		if ae != nil {
			writeError(w, ae)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(body)
	}
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.status)
	_, _ = w.Write(JSON(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{e.msg, e.code}))
}

// JSON is v as the API answers it: one line of JSON, without HTML escapes
// (& < > as they are: a URL's query).
func JSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the answers' types always encode
	return b.Bytes()
}

// params returns r's parameters, refusing unknown and repeated ones and a
// missing class when allowed holds "class"; the hour parameter becomes its
// label, by default the current hour's.
func (s *server) params(r *http.Request, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	for k, vs := range r.URL.Query() {
		switch {
		case !slices.Contains(allowed, k):
			return nil, fail(http.StatusBadRequest, "bad_request", "unknown parameter %q", k)
		case len(vs) > 1:
			return nil, fail(http.StatusBadRequest, "bad_request", "parameter %q given %d times", k, len(vs))
		}
		out[k] = vs[0]
	}
	if slices.Contains(allowed, "class") && out["class"] == "" {
		return nil, fail(http.StatusBadRequest, "bad_request", "class is required (?class=NAME)")
	}
	loc := store.OrUTC(s.opts.Folder.Location)
	h := store.HourStart(s.opts.Now(), loc)
	if label, ok := out["hour"]; ok {
		var err error
		if h, err = store.ParseHour(label, loc); err != nil {
			return nil, fail(http.StatusBadRequest, "bad_request", "hour: %v", err)
		}
	}
	out["hour"] = store.HourLabel(h, loc)
	return out, nil
}

// read reads the hour's file; a missing one is a 404.
func (s *server) read(label string) (policy.File, []byte, error) {
	f, data, err := s.opts.Folder.Read(label)
	var nf *NoFileError
	if errors.As(err, &nf) {
		return f, nil, fail(http.StatusNotFound, "no_policy", "no policy file for %s (policygen -hour %s writes it)", nf.Hour, nf.Hour)
	}
	return f, data, err
}

func (s *server) policy(r *http.Request) ([]byte, error) {
	q, err := s.params(r, "hour")
	if err != nil {
		return nil, err
	}
	_, data, err := s.read(q["hour"])
	if err != nil {
		return nil, err
	}
	return PolicyJSON(data)
}

func (s *server) lane(r *http.Request) ([]byte, error) {
	q, err := s.params(r, "class", "hour")
	if err != nil {
		return nil, err
	}
	f, _, err := s.read(q["hour"])
	if err != nil {
		return nil, err
	}
	ch, err := Choose(f, q["class"], s.opts.Lanes)
	var nl *NoLaneError
	switch {
	case errors.Is(err, ErrNoClass):
		return nil, fail(http.StatusNotFound, "no_class", "%v", err)
	case errors.As(err, &nl):
		return nil, fail(http.StatusNotFound, "no_lane", "%v", err)
	case err != nil:
		return nil, err
	}
	return JSON(ch), nil
}

func (s *server) next(r *http.Request) ([]byte, error) {
	q, err := s.params(r, "class")
	if err != nil {
		return nil, err
	}
	n, err := s.opts.Folder.Next(s.opts.Now(), q["class"])
	var nn *NoNextError
	if errors.As(err, &nn) {
		return nil, fail(http.StatusNotFound, "no_next", "%v", err)
	}
	if err != nil {
		return nil, err
	}
	return JSON(n), nil
}

func (s *server) book(r *http.Request) ([]byte, error) {
	q, err := s.params(r, "class", "hour")
	if err != nil {
		return nil, err
	}
	class := q["class"]
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, policy.MaxBookInput))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, fail(http.StatusRequestEntityTooLarge, "too_large", "body: larger than %d bytes", policy.MaxBookInput)
	case err != nil:
		return nil, fail(http.StatusBadRequest, "bad_request", "body: %v", err)
	}
	f, _, err := s.read(q["hour"])
	if err != nil {
		return nil, err
	}
	bp, err := f.Book(class)
	if err != nil {
		return nil, fail(http.StatusNotFound, "no_class", "%v", err)
	}
	in, err := policy.DecodeBookInput(body, false)
	if err != nil {
		return nil, fail(http.StatusBadRequest, "bad_request", "%v", err)
	}
	c, _ := f.Class(class) // f.Book found it
	out, err := AnswerWithLane(in, bp, c.Cutover, s.opts.Lanes)
	var unknown *UnknownLaneError
	switch {
	case errors.As(err, &unknown):
		unknown.Class = class
		return nil, err
	case err != nil:
		return nil, fail(http.StatusBadRequest, "bad_request", "%v", err)
	}
	return out, nil
}

// ErrNoCutover is the running question asked of a class whose policy has no
// cut-over (a rule: max file, or an input policy without cutover_after_s).
var ErrNoCutover = errors.New("running_s: the class has no cutover_after_s this hour (a policy file of rule: calibrated has one; on stdin give policy.cutover_after_s and policy.free_first)")

// Answer is the ledger's answer to in, as policygen book prints it, one
// line of JSON: policy.Book's decision, or with in.RunningS the running
// answer ({"action", "why", "elapsed_s"}, rounded to 0.01 s as the
// ledger's spent_s is) from the class's cut-over cut (in.Cutover, when the
// input gave one, wins).
func Answer(in policy.BookInput, p policy.BookPolicy, cut *policy.Cutover) ([]byte, error) {
	out, _, err := answer(in, p, cut)
	return out, err
}

// answer is Answer with the answer's action.
func answer(in policy.BookInput, p policy.BookPolicy, cut *policy.Cutover) ([]byte, policy.Action, error) {
	if in.RunningS == nil {
		d := policy.Book(in.Attempts, p)
		out, err := json.Marshal(d)
		if err != nil {
			return nil, "", fmt.Errorf("book: %w", err)
		}
		return append(out, '\n'), d.Action, nil
	}
	if in.Cutover != nil {
		cut = in.Cutover
	}
	if cut == nil {
		return nil, "", ErrNoCutover
	}
	d := policy.Running(in.Attempts, *in.RunningS, p, *cut)
	e := policy.Round(d.ElapsedS, 2)
	if !(e >= 0) || math.IsInf(e, 0) {
		return nil, "", fmt.Errorf("book: elapsed %v is not a number of seconds", d.ElapsedS)
	}
	out, _ := json.Marshal(struct { // a finite number and two strings: cannot fail
		Action   policy.Action `json:"action"`
		Why      string        `json:"why"`
		ElapsedS float64       `json:"elapsed_s"`
	}{d.Action, d.Why, e})
	return append(out, '\n'), d.Action, nil
}

// AnswerWithLane is Answer followed by the lane the action runs on, as
// POST /api/v1/book and policygen book -config answer: "lane", the name
// (the book's free lane for retry_free and wait, its paid lane for
// cut_over; null for stop, or when the book names no such lane), and
// "endpoint", that lane from lanes or null with it. A lane the book names
// that lanes lack is an *UnknownLaneError (its Class left for the caller).
func AnswerWithLane(in policy.BookInput, p policy.BookPolicy, cut *policy.Cutover, lanes []Lane) ([]byte, error) {
	out, action, err := answer(in, p, cut)
	if err != nil {
		return nil, err
	}
	var name string
	switch action {
	case policy.RetryFree, policy.Wait:
		name = p.FreeLane
	case policy.CutOver:
		name = p.PaidLane
	}
	lane, endpoint := []byte("null\n"), []byte("null\n")
	if name != "" {
		l, ok := find(lanes, name)
		if !ok {
			return nil, &UnknownLaneError{Lane: name}
		}
		lane, endpoint = JSON(name), JSON(l)
	}
	// out is one JSON object and a newline: the keys go before its brace.
	out = append(out[:len(out)-2], `,"lane":`...)
	out = append(append(out, bytes.TrimSuffix(lane, []byte("\n"))...), `,"endpoint":`...)
	return append(append(out, bytes.TrimSuffix(endpoint, []byte("\n"))...), "}\n"...), nil
}
