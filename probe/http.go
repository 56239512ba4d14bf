package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/lanewatch/lanewatch/internal/redact"
)

// errBodyPeek is how much of a non-stream body is read to name its error.
const errBodyPeek = 8 << 10

// transport returns a transport for one probe: no shared connections, no
// transparent compression, HTTP/2 offered over TLS; its connection marks
// the start of each write.
func (r *run) transport(scheme string) *http.Transport {
	dialer := &net.Dialer{KeepAlive: -1} // the probe is short and bounded
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &markConn{Conn: c, r: r}, nil
		},
		ForceAttemptHTTP2:      scheme == "https",
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// markConn records in its run's trace the time just before each write.
type markConn struct {
	net.Conn
	r *run
}

func (c *markConn) Write(p []byte) (int, error) {
	now := time.Now()
	c.r.mu.Lock()
	c.r.ct.writeStart = now
	c.r.mu.Unlock()
	return c.Conn.Write(p)
}

// noRedirects stops the client at the first redirect, whose response the
// probe reports: following would post again or carry the key elsewhere.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// sendError classifies a failed client.Do.
func (r *run) sendError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return r.timeout(ctx)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) { // drop "Post <url>:", keep the cause
		return fail(ConnError, err, "%s", uerr.Err)
	}
	return fail(ConnError, err, "%s", err)
}

// versionSegment matches a path segment that names an API version: v1,
// v1beta, v4.
var versionSegment = regexp.MustCompile(`^v[0-9]+[a-z0-9]*$`)

// missingVersion is the hint a 404 of an OpenAI-dialect lane gets when its
// base_url has no version segment (most servers serve /v1/chat/completions).
func (r *run) missingVersion(code int) string {
	if code != http.StatusNotFound || r.t.API != OpenAI {
		return ""
	}
	u, err := url.Parse(r.t.BaseURL)
	if err != nil {
		return ""
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if versionSegment.MatchString(seg) {
			return ""
		}
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1"
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return fmt.Sprintf("; no /v1 in base_url: try %s", redact.URL(u.String()))
}

// redirect names where a 3xx response pointed, for a Detail, redacted; a
// Location holding a word of the prompt is withheld.
func (r *run) redirect(resp *http.Response) string {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return ""
	}
	loc, err := resp.Location()
	switch {
	case errors.Is(err, http.ErrNoLocation):
		return "; redirect without a Location"
	case err != nil:
		return "; redirect to an unparsable Location"
	}
	u := redact.URL(loc.String())
	lower := u
	if unesc, err := url.PathUnescape(u); err == nil {
		lower = unesc
	}
	lower = strings.ToLower(lower)
	notWord := func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) && c != '-' && c != '_' }
	for _, w := range strings.FieldsFunc(strings.ToLower(r.t.Prompt), notWord) {
		if len(w) >= minPromptWord && strings.Contains(lower, w) {
			return "; redirect to a Location that repeats the prompt (withheld)"
		}
	}
	return "; redirect to " + u
}

// minPromptWord is the shortest prompt word that withholds a Location.
const minPromptWord = 6

// checkResponse sorts out non-stream responses and returns the body to read
// as an event stream: capped, and gunzipped if the server gzipped it.
func (r *run) checkResponse(resp *http.Response) (io.Reader, error) {
	code := resp.StatusCode
	if code < 200 || code > 299 {
		o := HTTPError
		if code == http.StatusTooManyRequests {
			o = RateLimited
		}
		r.s.RetryAfter = safeHeader(resp.Header.Get("Retry-After")) // a 503 may send one too
		return nil, fail(o, ErrStatus, "http %d%s from POST %s%s%s", code, bodyErrorType(resp.Body), r.url,
			r.missingVersion(code), r.redirect(resp))
	}
	body, err := r.decodedBody(resp)
	if err != nil {
		return nil, err
	}
	if mt := mediaType(resp); mt != "" && mt != "text/event-stream" {
		return nil, fail(HTTPError, ErrNotStream, "http %d with content-type %s, not an event stream%s",
			code, knownOr(mt, knownMediaTypes), bodyErrorType(body))
	}
	br := bufio.NewReaderSize(body, readBuf)
	if b, err := br.Peek(1); err == nil && (b[0] == '{' || b[0] == '[') {
		return nil, fail(HTTPError, ErrNotStream, "http %d with a JSON body, not an event stream%s",
			code, bodyErrorType(br))
	}
	return br, nil
}

// decodedBody caps the raw body and, if it is gzipped, the decoded bytes too.
func (r *run) decodedBody(resp *http.Response) (io.Reader, error) {
	raw := &capReader{r: resp.Body, max: r.t.MaxBytes}
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		return raw, nil
	case "gzip", "x-gzip":
		return &capReader{r: &gunzip{r: raw}, max: r.t.MaxBytes}, nil
	}
	return nil, fail(HTTPError, ErrEncoding, "unsupported content-encoding %s", knownOr(enc, knownEncodings))
}

func mediaType(resp *http.Response) string {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "invalid"
	}
	return mt
}

// bodyErrorType reads a little of an error body and returns ": <type>" when
// it names an error type or code, else "". The body itself is never quoted.
func bodyErrorType(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, errBodyPeek))
	if tok := errorType(b); tok != "" {
		return ": " + tok
	}
	return ""
}

// Media types and encodings a Detail may name; any other value a server sends
// is reported as "other", since a server's string could echo the prompt.
var (
	knownMediaTypes = map[string]bool{
		"application/json": true, "text/html": true, "text/plain": true,
		"application/octet-stream": true, "application/x-ndjson": true, "application/xml": true,
	}
	knownEncodings = map[string]bool{"br": true, "deflate": true, "compress": true, "zstd": true}
)

func knownOr(s string, known map[string]bool) string {
	if known[s] {
		return s
	}
	return "other"
}
