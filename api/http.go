package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Handler serves the read-only JSON API of docs/api.md (docs/openapi.yaml).
func Handler(opts Options) http.Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := (*server)(&opts)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/policy", only(http.MethodGet, s.policy))
	mux.HandleFunc("/api/v1/lane", only(http.MethodGet, s.lane))
	mux.HandleFunc("/api/v1/next", only(http.MethodGet, s.next))
	mux.HandleFunc("/api/v1/book", only(http.MethodPost, s.book))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		answer(w, fail(http.StatusNotFound, "not_found", "no such path %q (paths: /api/v1/policy, /api/v1/lane, /api/v1/next, /api/v1/book)", r.URL.Path), nil)
	})
	return mux
}

type server Options

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
			answer(w, fail(http.StatusMethodNotAllowed, "method_not_allowed", "%s %s: use %s", r.Method, r.URL.Path, method), nil)
			return
		}
		body, err := h(r)
		var ae *apiError
		if err != nil && !errors.As(err, &ae) {
			ae = &apiError{http.StatusServiceUnavailable, "unavailable", err.Error()}
		}
		answer(w, ae, body)
	}
}

// answer writes the error e, or body when e is nil.
func answer(w http.ResponseWriter, e *apiError, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if e == nil {
		_, _ = w.Write(body)
		return
	}
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
// missing class; "hour" is the hour's label, by default the current one's.
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
	loc := store.OrUTC(s.Folder.Location)
	h := store.HourStart(s.Now(), loc)
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
	f, data, err := s.Folder.Read(label)
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
	if _, err := f.NamedClass(q["class"]); err != nil {
		return nil, fail(http.StatusNotFound, "no_class", "%v", err)
	}
	ch, err := Choose(f, q["class"], s.Lanes)
	if nl := (*NoLaneError)(nil); errors.As(err, &nl) {
		return nil, fail(http.StatusNotFound, "no_lane", "%v", err)
	}
	return JSON(ch), err
}

func (s *server) next(r *http.Request) ([]byte, error) {
	q, err := s.params(r, "class")
	if err != nil {
		return nil, err
	}
	n, err := s.Folder.Next(s.Now(), q["class"])
	var nn *NoNextError
	if errors.As(err, &nn) {
		return nil, fail(http.StatusNotFound, "no_next", "%v", err)
	}
	return JSON(n), err
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
	c, err := f.NamedClass(class)
	if err != nil {
		return nil, fail(http.StatusNotFound, "no_class", "%v", err)
	}
	in, err := policy.DecodeBookInput(body, false)
	if err != nil {
		return nil, fail(http.StatusBadRequest, "bad_request", "%v", err)
	}
	out, err := AnswerWithLane(in, c.Book, c.Cutover, s.Lanes)
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

// AnswerWithLane is policy.Answer followed by "lane", the lane the action
// runs on, and "endpoint", that lane from lanes (docs/api.md); a lane lanes
// lack is an *UnknownLaneError (its Class left for the caller).
func AnswerWithLane(in policy.BookInput, p policy.BookPolicy, cut *policy.Cutover, lanes []Lane) ([]byte, error) {
	out, action, err := policy.Answer(in, p, cut)
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
	var lane, endpoint any // null
	if name != "" {
		l, ok := find(lanes, name)
		if !ok {
			return nil, &UnknownLaneError{Lane: name}
		}
		lane, endpoint = name, l
	}
	// out is one JSON object and a newline: the keys go before its brace.
	out = fmt.Appendf(out[:len(out)-2], `,"lane":%s,"endpoint":%s}`, bytes.TrimSpace(JSON(lane)), bytes.TrimSpace(JSON(endpoint)))
	return append(out, '\n'), nil
}
