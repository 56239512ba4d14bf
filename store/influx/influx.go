// Package influx stores lanewatch's points in InfluxDB: writes through the
// client library, reads in InfluxQL through /query (on 2.x, the bucket's
// DBRP mapping).
package influx

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	"github.com/lanewatch/lanewatch/internal/redact"
	"github.com/lanewatch/lanewatch/store"
)

// Options configure Open.
type Options struct {
	URL    string // e.g. http://127.0.0.1:8086, without credentials
	Org    string // 2.x; empty for 1.x
	Bucket string // 2.x's, or "database/retention-policy" on 1.x
	// Token is 2.x's API token, or "user:password" on 1.x; never printed.
	Token          string
	RequestTimeout time.Duration // per request; 0: store.DefaultRequestTimeout
	// Warn receives problems that are not fatal (slog-style); nil discards.
	Warn func(msg string, args ...any)
	// StartUnreachable: when the server cannot be reached at Open (not a
	// wrong token, bucket or host name), Open warns and returns the store.
	StartUnreachable bool
}

// Store keeps points in InfluxDB and nothing itself: a write refused for
// good fails with a *store.RefusedError, any other failure may pass.
type Store struct {
	client  influxdb2.Client
	write   api.WriteAPIBlocking
	where   string   // "influx URL bucket B", safe to print
	secrets []string // strings never to print

	// The read path: /query, with db and rp from the bucket.
	base, db, rp, token string
	http                *http.Client
	loopback            bool // answers uncompressed

	closed atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Open connects to InfluxDB and checks the URL, token and bucket with a
// read. A failure is one line naming the URL (without credentials) and
// the bucket.
func Open(ctx context.Context, o Options) (*Store, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("influx url %q: want http(s)://host:port", redact.URL(o.URL))
	}
	if o.Bucket == "" {
		return nil, errors.New("influx: bucket is empty (on InfluxDB 1.x use database/retention-policy, e.g. lanewatch/autogen)")
	}
	s := &Store{where: fmt.Sprintf("influx %s bucket %s", redact.URL(o.URL), o.Bucket)}
	if o.Token != "" {
		s.secrets = append(s.secrets, o.Token)
		if _, pw, ok := strings.Cut(o.Token, ":"); ok && len(pw) >= 4 {
			s.secrets = append(s.secrets, pw)
		}
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		s.secrets = append(s.secrets, pw)
	}
	timeout := cmp.Or(o.RequestTimeout, store.DefaultRequestTimeout)
	s.client = influxdb2.NewClientWithOptions(o.URL, o.Token, influxdb2.DefaultOptions().
		SetHTTPRequestTimeout(uint(max(timeout/time.Second, 1))).SetLogLevel(0))
	s.write = s.client.WriteAPIBlocking(o.Org, o.Bucket)
	s.base, s.token = strings.TrimSuffix(o.URL, "/"), o.Token
	s.db, s.rp, _ = strings.Cut(o.Bucket, "/")
	s.loopback = loopback(u.Hostname())
	// A connection per read: behind a Go reverse proxy, a reused one's next
	// answer came back empty in the outage tests.
	s.http = &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}
	check := fmt.Sprintf("SELECT %s FROM %s WHERE time > now() - 1m LIMIT 1", ident("ok"), ident(store.MeasurementProbe))
	if err := s.query(ctx, []string{check}, func(int, []string) (func([]store.Value) error, error) { return nil, nil }); err != nil {
		if !(o.StartUnreachable && unreachable(err)) {
			s.client.Close()
			return nil, fmt.Errorf("%s: read check: %w", s.where, s.explain(err))
		}
		if o.Warn != nil {
			o.Warn("influx unreachable at start", "store", s.where, "err", s.explain(err).Error())
		}
	}
	return s, nil
}

// loopback reports whether host (a URL's hostname) is this machine.
func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// Status names the server and bucket, without credentials.
func (s *Store) Status() store.Status { return store.Status{Where: s.where} }

// Prune is the bucket's retention's to do.
func (s *Store) Prune(context.Context, time.Time) (store.Pruned, error) {
	return store.Pruned{}, fmt.Errorf("%s: old probes and heartbeats are deleted on the server: set the bucket's retention (docs/schema.md, Retention)", s.where)
}

// Write sends the batch in one request.
func (s *Store) Write(ctx context.Context, b store.Batch) error {
	if s.closed.Load() {
		return fmt.Errorf("%s: write: %w", s.where, os.ErrClosed)
	}
	body, err := store.AppendLines(nil, b)
	if err != nil {
		return fmt.Errorf("%s: write: %w", s.where, err)
	}
	if len(body) == 0 {
		return nil
	}
	if err := s.write.WriteRecord(ctx, string(bytes.TrimSuffix(body, []byte{'\n'}))); err != nil {
		if transient(err) {
			return fmt.Errorf("%s: write: %w", s.where, s.classify(err))
		}
		var he *ihttp.Error
		status := 0
		if errors.As(err, &he) {
			status = he.StatusCode
		}
		return &store.RefusedError{Points: b.Len(), Status: status, Err: fmt.Errorf("%s: %w", s.where, s.explain(err))}
	}
	return nil
}

// Close releases the client.
func (s *Store) Close() error {
	if !s.closed.Swap(true) {
		s.client.Close()
	}
	return nil
}

// unreachable reports whether err is a passing failure, not a host name
// that does not resolve.
func unreachable(err error) bool {
	var dns *net.DNSError
	return !errors.As(err, &dns) && transient(err)
}

// transient reports whether a client error may go away by itself: no HTTP
// status, 408, 429 or 5xx, but for a missing bucket or a denied access.
func transient(err error) bool {
	var he *ihttp.Error
	if errors.As(err, &he) && he.StatusCode != 0 {
		return (he.StatusCode == 408 || he.StatusCode == 429 || he.StatusCode >= 500) &&
			!missingBucket(err.Error()) && !deniedAccess(err.Error())
	}
	return true
}

// deniedAccess reports whether a server's message says the credentials
// lack a permission.
func deniedAccess(msg string) bool {
	low := strings.ToLower(msg)
	return strings.Contains(low, "requires read") || strings.Contains(low, "requires write") ||
		strings.Contains(low, "unauthorized") || strings.Contains(low, "authorization failed")
}

func missingBucket(msg string) bool {
	low := strings.ToLower(msg)
	return strings.Contains(low, "no database") || strings.Contains(low, "database not found") ||
		strings.Contains(low, "retention policy not found") || strings.Contains(low, "bucket not found")
}

// classify is explain, marked store.ErrUnavailable when err is transient.
func (s *Store) classify(err error) error {
	if transient(err) {
		return store.Unavailable(s.explain(err))
	}
	return s.explain(err)
}

// explain makes a client error one line without secrets, with a hint; it
// unwraps to err.
func (s *Store) explain(err error) error {
	var ue *url.Error
	msg := err.Error()
	if errors.As(err, &ue) { // drop "Post "http://...?org=...": "
		msg = ue.Err.Error()
	}
	msg = strings.TrimPrefix(strings.Join(strings.Fields(msg), " "), "error ")
	var he *ihttp.Error
	status := 0
	if errors.As(err, &he) && he.StatusCode != 0 {
		status = he.StatusCode
		if he.Err == nil && he.Message == "" { // the client lost the body: say what the status means
			msg = fmt.Sprintf("%d %s", status, http.StatusText(status))
		} else if !strings.Contains(msg, strconv.Itoa(status)) {
			msg = fmt.Sprintf("%d %s", status, msg)
		}
	}
	low := strings.ToLower(msg)
	switch {
	case status == 401 || status == 403 || deniedAccess(low):
		msg += " (check the token; on InfluxDB 1.x it is user:password)"
	case missingBucket(low) || strings.Contains(low, "retention policy") || status == 404:
		msg += " (does the bucket exist? on InfluxDB 1.x the bucket is database/retention-policy; on 2.x reads need its DBRP mapping)"
	case strings.Contains(low, "connection refused") || strings.Contains(low, "no such host"):
		msg += " (is InfluxDB running at that URL?)"
	}
	for _, sec := range s.secrets {
		msg = strings.ReplaceAll(msg, sec, "[redacted]")
	}
	return &cleanError{msg: msg, err: err}
}

// cleanError is a printable message for an error whose text may hold secrets.
type cleanError struct {
	msg string
	err error
}

func (e *cleanError) Error() string { return e.msg }
func (e *cleanError) Unwrap() error { return e.err }
