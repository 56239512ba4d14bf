package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
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
	s := &server{opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/policy", s.only(http.MethodGet, s.policy))
	mux.HandleFunc("/api/v1/lane", s.only(http.MethodGet, s.lane))
	mux.HandleFunc("/api/v1/next", s.only(http.MethodGet, s.next))
	mux.HandleFunc("/api/v1/book", s.only(http.MethodPost, s.book))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no such path %q (paths: /api/v1/policy, /api/v1/lane, /api/v1/next, /api/v1/book)", r.URL.Path))
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

// only serves h for method (GET also answers HEAD), 405 otherwise.
func (s *server) only(method string, h func(*http.Request) ([]byte, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && (method != http.MethodGet || r.Method != http.MethodHead) {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, method))
			return
		}
		body, err := h(r)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = &apiError{http.StatusServiceUnavailable, "unavailable", err.Error()}
			}
			writeError(w, ae.status, ae.code, ae.msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(body)
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(encode(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code}))
}

// encode writes v as one line of JSON, without HTML escapes.
func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the answers' types always encode
	return b.Bytes()
}

// query returns the parameters of r, refusing unknown and repeated ones.
func query(r *http.Request, allowed ...string) (map[string]string, error) {
	q := r.URL.Query()
	out := map[string]string{}
	for k, vs := range q {
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		switch {
		case !known:
			return nil, fail(http.StatusBadRequest, "bad_request", "unknown parameter %q", k)
		case len(vs) > 1:
			return nil, fail(http.StatusBadRequest, "bad_request", "parameter %q given %d times", k, len(vs))
		}
		out[k] = vs[0]
	}
	return out, nil
}

// hour is the label of the hour parameter, by default the current hour.
func (s *server) hour(q map[string]string) (string, error) {
	loc := store.OrUTC(s.opts.Folder.Location)
	h, ok := q["hour"]
	if !ok {
		return store.HourLabel(store.HourStart(s.opts.Now(), loc), loc), nil
	}
	t, err := store.ParseHour(h, loc)
	if err != nil {
		return "", fail(http.StatusBadRequest, "bad_request", "hour: %v", err)
	}
	return store.HourLabel(t, loc), nil
}

func needClass(q map[string]string) (string, error) {
	c := q["class"]
	if c == "" {
		return "", fail(http.StatusBadRequest, "bad_request", "class is required (?class=NAME)")
	}
	return c, nil
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
	q, err := query(r, "hour")
	if err != nil {
		return nil, err
	}
	label, err := s.hour(q)
	if err != nil {
		return nil, err
	}
	_, data, err := s.read(label)
	if err != nil {
		return nil, err
	}
	return PolicyJSON(data)
}

// classHour reads the class and hour parameters of /lane and /book: the
// class required, the hour defaulting to the current one.
func (s *server) classHour(r *http.Request) (class, label string, err error) {
	q, err := query(r, "class", "hour")
	if err != nil {
		return "", "", err
	}
	if class, err = needClass(q); err != nil {
		return "", "", err
	}
	if label, err = s.hour(q); err != nil {
		return "", "", err
	}
	return class, label, nil
}

func (s *server) lane(r *http.Request) ([]byte, error) {
	class, label, err := s.classHour(r)
	if err != nil {
		return nil, err
	}
	f, _, err := s.read(label)
	if err != nil {
		return nil, err
	}
	ch, err := Choose(f, class, s.opts.Lanes)
	var nl *NoLaneError
	switch {
	case errors.Is(err, ErrNoClass):
		return nil, fail(http.StatusNotFound, "no_class", "%v", err)
	case errors.As(err, &nl):
		return nil, fail(http.StatusNotFound, "no_lane", "%v", err)
	case err != nil:
		return nil, err
	}
	return encode(ch), nil
}

func (s *server) next(r *http.Request) ([]byte, error) {
	q, err := query(r, "class")
	if err != nil {
		return nil, err
	}
	class, err := needClass(q)
	if err != nil {
		return nil, err
	}
	n, err := s.opts.Folder.Next(s.opts.Now(), class)
	var nn *NoNextError
	if errors.As(err, &nn) {
		return nil, fail(http.StatusNotFound, "no_next", "%v", err)
	}
	if err != nil {
		return nil, err
	}
	return encode(n), nil
}

func (s *server) book(r *http.Request) ([]byte, error) {
	class, label, err := s.classHour(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, policy.MaxBookInput))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, fail(http.StatusRequestEntityTooLarge, "too_large", "body: larger than %d bytes", policy.MaxBookInput)
	case err != nil:
		return nil, fail(http.StatusBadRequest, "bad_request", "body: %v", err)
	}
	f, _, err := s.read(label)
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

// Answer is the ledger's answer to in, as policygen book prints it: Book's
// decision (BookAnswer), or with in.RunningS the running answer, from the
// class's cut-over cut (in.Cutover, when the input gave one, wins).
func Answer(in policy.BookInput, p policy.BookPolicy, cut *policy.Cutover) ([]byte, error) {
	out, _, err := answer(in, p, cut)
	return out, err
}

// answer is Answer with the answer's action.
func answer(in policy.BookInput, p policy.BookPolicy, cut *policy.Cutover) ([]byte, policy.Action, error) {
	if in.RunningS == nil {
		d := policy.Book(in.Attempts, p)
		out, err := BookAnswer(in.Attempts, p)
		return out, d.Action, err
	}
	if in.Cutover != nil {
		cut = in.Cutover
	}
	if cut == nil {
		return nil, "", ErrNoCutover
	}
	d := policy.Running(in.Attempts, *in.RunningS, p, *cut)
	out, err := RunningAnswer(d)
	return out, d.Action, err
}

// AnswerWithLane is Answer followed by the lane the action runs on, as
// POST /api/v1/book and policygen book -config answer: "lane", the name
// (the book's free lane for retry_free and wait, its paid lane for
// cut_over; null for stop, or when the book names no such lane), and
// "endpoint", that lane's endpoint from lanes ({"lane", "kind", "api",
// "base_url", "model", "api_key_env"}: the name of the key's variable,
// never a key) or null with it. A lane the book names that lanes lack is
// an *UnknownLaneError (its Class left for the caller).
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
	lane, endpoint := []byte("null"), []byte("null")
	if name != "" {
		l, ok := find(lanes, name)
		if !ok {
			return nil, &UnknownLaneError{Lane: name}
		}
		lane, endpoint = jsonOf(name), jsonOf(l)
	}
	// out is one JSON object and a newline: the keys go before its brace.
	out = append(out[:len(out)-2], `,"lane":`...)
	out = append(append(out, lane...), `,"endpoint":`...)
	return append(append(out, endpoint...), "}\n"...), nil
}

// jsonOf is v as compact JSON, with & < > as they are (a URL's query).
func jsonOf(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string or a Lane always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// runningJSON is the running answer's JSON: {"action", "why", "elapsed_s"}.
type runningJSON struct {
	Action   policy.Action `json:"action"`
	Why      string        `json:"why"`
	ElapsedS float64       `json:"elapsed_s"`
}

// RunningAnswer is the running answer as one line of JSON, the elapsed
// seconds rounded to 0.01 as the ledger's spent_s is.
func RunningAnswer(d policy.RunningDecision) ([]byte, error) {
	e := policy.Round(d.ElapsedS, 2)
	if !(e >= 0) || math.IsInf(e, 0) {
		return nil, fmt.Errorf("book: elapsed %v is not a number of seconds", d.ElapsedS)
	}
	out, err := json.Marshal(runningJSON{Action: d.Action, Why: d.Why, ElapsedS: e})
	if err != nil {
		return nil, fmt.Errorf("book: %w", err)
	}
	return append(out, '\n'), nil
}

// BookAnswer is the ledger's answer as policygen book prints it: one line
// of JSON.
func BookAnswer(attempts []policy.Attempt, p policy.BookPolicy) ([]byte, error) {
	out, err := json.Marshal(policy.Book(attempts, p))
	if err != nil {
		return nil, fmt.Errorf("book: %w", err)
	}
	return append(out, '\n'), nil
}
