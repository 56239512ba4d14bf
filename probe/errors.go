package probe

import (
	"errors"
	"fmt"
	"strings"
)

// Error is the error Run returns for every outcome but OK. Callers pick it
// out with errors.As and branch on Outcome. Its text never holds the API
// key, the generated text or the response body.
type Error struct {
	Lane        string
	Outcome     Outcome
	Status      int    // HTTP status, 0 if none
	RetryAfter  string // Retry-After of a non-2xx response, verbatim (same as Sample.RetryAfter)
	HeadersSeen bool   // had the response headers arrived?
	Detail      string // same as Sample.Detail
	Err         error  // the cause, if any; see the Err* sentinels
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("probe lane %q: %s", e.Lane, e.Outcome)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the cause, so errors.Is works with the Err* sentinels,
// context.DeadlineExceeded and network errors.
func (e *Error) Unwrap() error { return e.Err }

// Causes a probe may fail with, for errors.Is.
var (
	ErrTooLarge      = errors.New("response over the byte cap")
	ErrMalformed     = errors.New("malformed JSON in a data line")
	ErrInvalidUTF8   = errors.New("invalid UTF-8 in a data line")
	ErrErrorEvent    = errors.New("error event in the stream")
	ErrTruncated     = errors.New("stream closed mid-event")
	ErrNoTerminal    = errors.New("stream ended without a terminal event")
	ErrNotStream     = errors.New("response is not an event stream")
	ErrEncoding      = errors.New("unsupported content-encoding")
	ErrStatus        = errors.New("non-2xx status")
	ErrInvalidTarget = errors.New("invalid target")
)

// fail is the failure of a step of the probe; Run's finish fills in the
// rest of the *Error from the Sample.
func fail(o Outcome, err error, format string, args ...any) *Error {
	return &Error{Outcome: o, Detail: fmt.Sprintf(format, args...), Err: err}
}

const maxDetail = 160

// safeToken returns s if it is a short machine token (letters, digits and
// "_.:/+-"), else "": what an error may quote of a configured value.
func safeToken(s string) string {
	if len(s) == 0 || len(s) > 48 {
		return ""
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.ContainsRune("_.:/+-", c)
		if !ok {
			return ""
		}
	}
	return s
}

// safeHeader returns a header value verbatim if it is short printable ASCII,
// else "".
func safeHeader(s string) string {
	if len(s) > 64 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return ""
		}
	}
	return s
}

// scrub is the last guard: it bounds a detail's length and blanks the key
// should it ever have been echoed back.
func scrub(s, key string) string {
	if key != "" && strings.Contains(s, key) {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "..."
	}
	return s
}
