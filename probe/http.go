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

	"github.com/lanewatch/lanewatch/internal/redact"
)

// maxRedirects is how many same-origin redirects a probe follows.
const maxRedirects = 3

// errBodyPeek is how much of a non-stream body is read to name its error.
const errBodyPeek = 8 << 10

// newTransport returns a transport for one probe: no shared connections, no
// transparent compression (a gzip stream is decoded by the probe itself),
// HTTP/2 offered over TLS. mark is called just before each write to the
// connection, so the probe knows when the request's bytes went out.
func newTransport(scheme string, mark func(time.Time)) *http.Transport {
	dialer := &net.Dialer{KeepAlive: -1} // the probe is short and bounded
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &markConn{Conn: c, mark: mark}, nil
		},
		ForceAttemptHTTP2:      scheme == "https",
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// markConn calls mark with the time just before each write.
type markConn struct {
	net.Conn
	mark func(time.Time)
}

func (c *markConn) Write(p []byte) (int, error) {
	c.mark(time.Now())
	return c.Conn.Write(p)
}

// checkRedirect follows only same-origin redirects, and only a few: Go strips
// Authorization on a cross-host redirect but would forward x-api-key.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return ErrRedirectLoop
	}
	if origin(req.URL) != origin(via[0].URL) {
		return ErrRedirectHost
	}
	return nil
}

func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// sendError classifies a failed client.Do.
func (r *run) sendError(ctx context.Context, resp *http.Response, err error) error {
	if resp != nil { // a refused redirect still hands back its response
		r.s.Status = resp.StatusCode
	}
	switch {
	case ctx.Err() != nil:
		return r.timeout(ctx)
	case errors.Is(err, ErrRedirectHost):
		return fail(ConnError, ErrRedirectHost, "redirect to another host or scheme refused")
	case errors.Is(err, ErrRedirectLoop):
		return fail(ConnError, ErrRedirectLoop, "more than %d redirects", maxRedirects)
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
// base_url has no version segment: the probe posts to base_url +
// /chat/completions, as the OpenAI SDKs do, and most servers serve
// /v1/chat/completions (https://api.openai.com/v1, http://127.0.0.1:11434/v1).
// An anthropic base_url works with or without /v1 and needs none.
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
		return nil, fail(o, ErrStatus, "http %d%s from POST %s%s", code, bodyErrorType(resp.Body), r.url, r.missingVersion(code))
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
