package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	"github.com/influxdata/influxdb-client-go/v2/api/query"
	"github.com/lanewatch/lanewatch/internal/redact"
	"github.com/lanewatch/lanewatch/store/lineproto"
)

// DefaultRequestTimeout bounds one request to InfluxDB when
// InfluxOptions.RequestTimeout is 0.
const DefaultRequestTimeout = 20 * time.Second

// InfluxOptions configure OpenInflux.
type InfluxOptions struct {
	// URL of the server, e.g. http://127.0.0.1:8086. Credentials belong in
	// Token, not here.
	URL string
	// Org is the InfluxDB 2.x organization; empty for 1.8.
	Org string
	// Bucket is the 2.x bucket, or "database/retention-policy" on 1.8
	// (e.g. "lanewatch/autogen").
	Bucket string
	// Token is the 2.x API token, or "user:password" (or empty) on 1.8. It is
	// never logged, stored or put in an error.
	Token string
	// RequestTimeout bounds one HTTP request; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Query is the language of reads: QueryInfluxQL (through /query) or
	// QueryFlux; "" picks InfluxQL when Org is empty (InfluxDB 1.x, where
	// it is several times faster and needs no flux-enabled) and Flux
	// otherwise (2.x, Cloud).
	Query string
	// Warn receives non-fatal problems; msg is lowercase, args are
	// slog-style key/value pairs. Nil discards.
	Warn func(msg string, args ...any)
	// StartUnreachable lets a writer start during an outage: when the read
	// check fails only because the server cannot be reached (connection
	// refused or reset, timeout, 408, 429, 5xx), OpenInflux warns and
	// returns the store, whose writes then fail until the server answers
	// (a Spool around it keeps them). A wrong token, a missing bucket or a
	// host that does not resolve are still errors.
	StartUnreachable bool
}

// Influx stores samples in InfluxDB 1.8+ or 2.x through blocking writes and
// InfluxQL (1.x) or Flux (2.x) reads. It keeps nothing itself: a write that fails fails, a
// *RefusedError when the server refused the points for good (400, 401, 403,
// 404, 413), any other error when it may go away by itself. Wrap it in a
// Spool to keep points through an outage.
type Influx struct {
	client   influxdb2.Client
	writeAPI api.WriteAPIBlocking
	queryAPI api.QueryAPI
	bucket   string
	where    string   // "influx URL bucket B", safe to print
	secrets  []string // strings never to print
	warn     func(string, ...any)

	// The InfluxQL read path: /query, with db and rp from the bucket.
	influxQL bool
	ql       qlClient

	mu     sync.Mutex // guards enc and closed
	enc    encoder
	closed bool
}

var _ Store = (*Influx)(nil)

// OpenInflux connects to InfluxDB and checks, with a real read of the bucket,
// that the URL, token and bucket work: Ping and Health would not check
// auth. Each failure is one line naming the URL (without credentials) and the
// bucket, never the token.
func OpenInflux(ctx context.Context, o InfluxOptions) (*Influx, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("influx url %q: want http(s)://host:port", redact.URL(o.URL))
	}
	if o.Bucket == "" {
		return nil, errors.New("influx: bucket is empty (on InfluxDB 1.8 use database/retention-policy, e.g. lanewatch/autogen)")
	}
	s := &Influx{bucket: o.Bucket, warn: o.Warn}
	if s.warn == nil {
		s.warn = func(string, ...any) {}
	}
	s.where = fmt.Sprintf("influx %s bucket %s", redact.URL(o.URL), o.Bucket)
	if o.Token != "" {
		s.secrets = append(s.secrets, o.Token)
		if _, pw, ok := strings.Cut(o.Token, ":"); ok && len(pw) >= 4 {
			s.secrets = append(s.secrets, pw)
		}
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		s.secrets = append(s.secrets, pw)
	}
	timeout := cmp.Or(o.RequestTimeout, DefaultRequestTimeout)
	opts := influxdb2.DefaultOptions().
		SetHTTPRequestTimeout(uint(max(timeout/time.Second, 1))).
		SetLogLevel(0)
	s.client = influxdb2.NewClientWithOptions(o.URL, o.Token, opts)
	s.writeAPI = s.client.WriteAPIBlocking(o.Org, o.Bucket)
	s.queryAPI = s.client.QueryAPI(o.Org)
	switch o.Query {
	case "":
		s.influxQL = o.Org == ""
	case QueryInfluxQL:
		s.influxQL = true
	case QueryFlux:
	default:
		s.client.Close()
		return nil, fmt.Errorf("influx: query language %q: want %s or %s", o.Query, QueryInfluxQL, QueryFlux)
	}
	s.ql.base, s.ql.token = strings.TrimSuffix(o.URL, "/"), o.Token
	s.ql.db, s.ql.rp = splitBucket(o.Bucket)
	s.ql.loopback = isLoopback(u.Hostname())
	// A connection per InfluxQL read: behind a Go reverse proxy, a reused
	// connection's next response came back empty (200, no body) in the
	// outage tests. Reads are few (a handful per policy or round).
	s.ql.http = &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}

	check := func() error {
		if s.influxQL {
			// A read of the database and retention policy the writes go to:
			// a missing one is an error here, as it is for Flux.
			return s.ql.query(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE time > now() - 1m LIMIT 1", qlIdent(fieldOK), qlIdent(MeasurementProbe)), func(row) {})
		}
		flux := fmt.Sprintf("from(bucket: %s) |> range(start: -1m) |> limit(n: 1)", fluxString(o.Bucket))
		return s.query(ctx, flux, func(*query.FluxRecord) error { return nil })
	}
	if err := check(); err != nil {
		if !(o.StartUnreachable && unreachable(err)) {
			s.client.Close()
			return nil, fmt.Errorf("%s: read check: %w", s.where, s.explain(err))
		}
		s.warn("influx unreachable at start", "store", s.where, "err", s.explain(err).Error())
	}
	return s, nil
}

// Where names the server and bucket, without credentials.
func (s *Influx) Where() string { return s.where }

// Write sends the points in one request. A permanent refusal is a
// *RefusedError; any other error may go away by itself.
func (s *Influx) Write(ctx context.Context, probes []Probe, hourly []Hourly) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("%s: write: %w", s.where, os.ErrClosed)
	}
	body, err := s.enc.round(probes, hourly)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("%s: write: %w", s.where, err)
	}
	lines := string(bytes.TrimSuffix(body, []byte{'\n'})) // a copy: the encoder's buffer is reused
	s.mu.Unlock()
	if lines == "" {
		return nil
	}
	if err := s.writeAPI.WriteRecord(ctx, lines); err != nil {
		if isTransient(err) {
			return fmt.Errorf("%s: write: %w", s.where, s.classify(err))
		}
		var he *ihttp.Error
		status := 0
		if errors.As(err, &he) {
			status = he.StatusCode
		}
		return &RefusedError{Points: len(probes) + len(hourly), Status: status,
			Err: fmt.Errorf("%s: %w", s.where, s.explain(err))}
	}
	return nil
}

// unreachable reports whether err says the server could not be reached or
// answered with a passing failure, as opposed to a wrong URL, token or bucket.
func unreachable(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return false
	}
	return isTransient(err)
}

// isTransient reports whether a client error may go away by itself: no HTTP
// status (network, timeout, cancelled), 408, 429 or 5xx, except a 5xx that
// says the database or retention policy does not exist or that the token
// may not read or write it (InfluxDB 1.8's Flux answers both with a 500:
// "failed to initialize execute state: ... requires READ for database").
func isTransient(err error) bool {
	var he *ihttp.Error
	if errors.As(err, &he) && he.StatusCode != 0 {
		if missingBucket(err.Error()) || deniedAccess(err.Error()) {
			return false
		}
		return he.StatusCode == 408 || he.StatusCode == 429 || he.StatusCode >= 500
	}
	return true
}

// deniedAccess reports whether a server's message says the credentials
// lack a permission: InfluxDB 1.8's "requires READ for database" (or
// WRITE), "unauthorized" and "authorization failed".
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

// classify is explain, marked ErrUnavailable when err may go away by itself.
func (s *Influx) classify(err error) error {
	e := s.explain(err)
	if isTransient(err) {
		return unavailable{e}
	}
	return e
}

// Probes returns the probe points q selects.
func (s *Influx) Probes(ctx context.Context, q Query) ([]Probe, error) {
	return readPoints(ctx, s, "probes", &probeSchema, q, probeKey, probeOf)
}

// Hourly returns the hourly points q selects.
func (s *Influx) Hourly(ctx context.Context, q Query) ([]Hourly, error) {
	return readPoints(ctx, s, "hourly", &hourlySchema, q, hourlyKey, hourlyOf)
}

func probeOf(r row) Probe   { return rowPoint(&probeSchema, r) }
func hourlyOf(r row) Hourly { return rowPoint(&hourlySchema, r) }

// rowPoint reads one point of measurement s from a row of a read. A field
// the row lacks, or holds with another type, reads as zero (an optional
// one as absent).
func rowPoint[T any](s *schema[T], r row) T {
	var p T
	lane, kind, site, at := s.id(&p)
	*lane, *kind, *site, *at = str(r, s.tags[0]), str(r, s.tags[1]), str(r, TagSite), r.at().UTC()
	for i := range s.fields {
		f := &s.fields[i]
		v := r.value(f.key)
		ok := false
		switch f.kind {
		case lineproto.Float:
			*f.f(&p), ok = numberOf(v)
		case lineproto.Int:
			*f.i(&p), ok = intValue(v)
		case lineproto.Bool:
			var b bool
			if b, ok = v.(bool); ok {
				f.setBool(&p, b)
			}
		case lineproto.String:
			*f.s(&p), ok = v.(string)
		}
		if ok && f.seen != nil {
			f.seen(&p)
		}
	}
	return p
}

// selectFields returns the field keys of s a read asks for: want's, in the
// schema's order (nil or empty: every field), or an error naming a key s
// does not have. A marker field is always asked for: InfluxDB leaves out
// a row whose selected fields are all absent, and a reservation holds the
// marker alone.
func selectFields[T any](s *schema[T], want []string) ([]string, error) {
	all := s.fieldKeys()
	if len(want) == 0 {
		return all, nil
	}
	for _, k := range want {
		if !slices.Contains(all, k) {
			return nil, fmt.Errorf("%s has no field %q (fields: %s)", s.measurement, k, strings.Join(all, ", "))
		}
	}
	var out []string
	for i, k := range all {
		if slices.Contains(want, k) || s.fields[i].alone {
			out = append(out, k)
		}
	}
	return out, nil
}

// readPoints reads one measurement's points that q selects, one query per
// window, and sorts them by time, lane, kind and site.
//
// An InfluxQL answer holds one row per series and time, in time order:
// its points are kept as they come (MessagePack rows decoded straight into
// them) and sorted within each time, without the map of latest points that
// Flux answers go through (one table per series; on InfluxDB 1.8 a point
// at the range's stop too). Rows of one key that an answer repeats (a
// point with a tag beyond the schema's) keep the last, as the map does.
func readPoints[T any](ctx context.Context, s *Influx, what string, sch *schema[T], q Query,
	key func(*T) pointKey, fromRow func(row) T) ([]T, error) {
	m := q.matcher()
	fields, err := selectFields(sch, q.Fields)
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", s.where, what, err)
	}
	if m.empty() {
		return []T{}, nil
	}
	if err := s.checkOpen(); err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", s.where, what, err)
	}
	if !s.influxQL {
		l := newLatest(key)
		for _, span := range m.spans {
			err := s.query(ctx, s.flux(sch.measurement, fields, span, m), func(r *query.FluxRecord) error {
				l.putIn(fromRow(fluxRow{r}), m) // Flux on InfluxDB 1.8 includes points at stop
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("%s: read %s: %w", s.where, what, s.classify(err))
			}
		}
		return l.sorted(), nil
	}
	// The spans go in pieces, two at a time: influxd answers each with one
	// core, and this side decodes one while the server encodes another.
	parts := splitSpans(m.spans, qlPieces, qlMinPiece)
	got := make([][][]T, len(parts))
	err = runPieces(ctx, len(parts), qlParallel, func(ctx context.Context, i int) (err error) {
		got[i], err = qlReadSpan(ctx, s, sch, fields, parts[i], m, key, fromRow)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", s.where, what, s.classify(err))
	}
	n := 0
	for _, g := range got {
		for _, b := range g {
			n += len(b)
		}
	}
	out := make([]T, 0, n)
	for _, g := range got {
		for _, b := range g {
			out = append(out, b...)
		}
	}
	return sortUnique(out, key), nil
}

// How an InfluxQL read splits its spans: into at most qlPieces pieces of
// at least qlMinPiece each, qlParallel of them read at a time.
const (
	qlPieces   = 4
	qlMinPiece = 24 * time.Hour
	qlParallel = 2
)

// splitSpans cuts each span into at most pieces parts of at least minPiece
// each, on whole hours from the span's start; in order, disjoint, covering
// the spans exactly.
func splitSpans(spans [][2]int64, pieces int, minPiece time.Duration) [][2]int64 {
	var out [][2]int64
	for _, sp := range spans {
		n := min(int64(pieces), (sp[1]-sp[0])/int64(minPiece))
		if n <= 1 { // short, or too long to subtract (the stores' whole range): one piece
			out = append(out, sp)
			continue
		}
		step := (sp[1] - sp[0]) / n
		step -= step % int64(time.Hour)
		from := sp[0]
		for i := int64(1); i < n; i++ {
			out = append(out, [2]int64{from, from + step})
			from += step
		}
		out = append(out, [2]int64{from, sp[1]})
	}
	return out
}

// qlReadSpan reads the points of one span through InfluxQL, in the order
// of the answer, dropping those m does not select. The points come in
// blocks, each full but the last: the caller copies them once into a slice
// of the right size, where one growing slice would copy them about twice
// more (a month at scale: 2.16 M points of 128 bytes).
func qlReadSpan[T any](ctx context.Context, s *Influx, sch *schema[T], fields []string, span [2]int64, m *matcher,
	key func(*T) pointKey, fromRow func(row) T) ([][]T, error) {
	var full [][]T
	cur := make([]T, 0, 64)
	// keep appends p and takes its key in place (a key taken of a local
	// would move each point to the heap), dropping a point m does not select.
	keep := func(p T) {
		if len(cur) == cap(cur) {
			full = append(full, cur)
			cur = make([]T, 0, min(2*cap(cur), 1<<14))
		}
		cur = append(cur, p)
		last := len(cur) - 1
		if k := key(&cur[last]); !m.timeOK(k.ns) || !m.seriesOK(k.lane, k.site) {
			cur = cur[:last]
		}
	}
	err := qlQuerySpan(ctx, s, sch, fields, span, m, fromRow, keep)
	return append(full, cur), err
}

// qlQuerySpan runs the InfluxQL select of one span and hands keep each
// point of the answer, MessagePack or JSON, in the answer's order.
func qlQuerySpan[T any](ctx context.Context, s *Influx, sch *schema[T], fields []string, span [2]int64, m *matcher,
	fromRow func(row) T, keep func(T)) error {
	var plan qlPlan
	return s.ql.queryTyped(ctx, qlSelect(sch.measurement, fields, span, m),
		func(r row) { keep(fromRow(r)) },
		func(cols []string) { plan = newQLPlan(sch, cols) },
		func(vals []qlValue) { keep(qlPoint(sch, &plan, vals)) })
}

// compareKindFirst orders keys of one time as InfluxDB's series keys do
// when the tags sort like the strings: kind, lane, site.
func compareKindFirst(a, b pointKey) int {
	return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.kind, b.kind), cmp.Compare(a.lane, b.lane), cmp.Compare(a.site, b.site))
}

// sortUnique sorts points by time, lane, kind and site, keeping the last of
// points with the same key. Points already in time order (an InfluxQL
// answer) are sorted within each run of one time, in place; others go
// through latest.
func sortUnique[T any](pts []T, key func(*T) pointKey) []T {
	for i := 1; i < len(pts); i++ {
		if key(&pts[i-1]).ns > key(&pts[i]).ns {
			l := newLatest(key)
			for _, p := range pts {
				l.put(p)
			}
			return l.sorted()
		}
	}
	// Each run of one time sorted by the series' ranks (runSorter).
	// A sorted run is never longer than the run, so pts[:w], the runs
	// done, never reaches the runs eachRun has still to scan.
	sorter := newRunSorter(key)
	var tmp []T
	w := 0
	_ = eachRun(pts, key, func(run []T) error {
		sorted := sorter.sort(run, tmp)
		if len(sorted) > 0 && &sorted[0] != &run[0] {
			tmp = sorted
		}
		w += copy(pts[w:], sorted)
		return nil
	})
	clear(pts[w:])
	return pts[:w]
}

func (s *Influx) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return os.ErrClosed
	}
	return nil
}

// flux builds the query for one measurement over one span: a bounded range,
// the measurement, site, lane and field filters first, then one row per
// point.
func (s *Influx) flux(measurement string, fields []string, span [2]int64, m *matcher) string {
	var b strings.Builder
	fmt.Fprintf(&b, "from(bucket: %s)\n", fluxString(s.bucket))
	fmt.Fprintf(&b, "  |> range(start: %s, stop: %s)\n", fluxNano(span[0]), fluxNano(span[1]))
	fmt.Fprintf(&b, "  |> filter(fn: (r) => r._measurement == %s)\n", fluxString(measurement))
	fluxSites(&b, m)
	if m.lanes != nil && len(m.lanes) <= maxPushedLanes {
		b.WriteString("  |> filter(fn: (r) => ")
		for i, lane := range slices.Sorted(maps.Keys(m.lanes)) {
			if i > 0 {
				b.WriteString(" or ")
			}
			fmt.Fprintf(&b, "r.%s == %s", TagLane, fluxString(lane))
		}
		b.WriteString(")\n")
	}
	fluxFieldsPivot(&b, fields)
	return b.String()
}

// fluxSites adds the filter that selects m's sites, when it names any.
func fluxSites(b *strings.Builder, m *matcher) {
	if m.sites == nil {
		return
	}
	b.WriteString("  |> filter(fn: (r) => ")
	for i, site := range slices.Sorted(maps.Keys(m.sites)) {
		if i > 0 {
			b.WriteString(" or ")
		}
		if site == "" {
			fmt.Fprintf(b, "not exists r.%s", TagSite)
		} else {
			fmt.Fprintf(b, "r.%s == %s", TagSite, fluxString(site))
		}
	}
	b.WriteString(")\n")
}

// fluxFieldsPivot ends a Flux read: the fields kept, then one row per
// point (a column per field).
func fluxFieldsPivot(b *strings.Builder, fields []string) {
	b.WriteString("  |> filter(fn: (r) => ")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(" or ")
		}
		fmt.Fprintf(b, "r._field == %s", fluxString(f))
	}
	b.WriteString(")\n")
	b.WriteString("  |> pivot(rowKey: [\"_time\"], columnKey: [\"_field\"], valueColumn: \"_value\")\n")
}

// query runs a Flux query and hands each row to row, checking the result's
// error after the last row.
func (s *Influx) query(ctx context.Context, flux string, row func(*query.FluxRecord) error) error {
	res, err := s.queryAPI.Query(ctx, flux)
	if err != nil {
		return err
	}
	defer func() { _ = res.Close() }()
	for res.Next() {
		if err := row(res.Record()); err != nil {
			return err
		}
	}
	return res.Err()
}

// fluxString quotes s as a Flux string literal.
func fluxString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`, "${", `\${`)
	return `"` + r.Replace(s) + `"`
}

// fluxNano writes Unix nanoseconds as a Flux time literal.
func fluxNano(ns int64) string {
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

// Close releases the client.
func (s *Influx) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.client.Close()
	}
	return nil
}

// explain turns a client error into one printable line without secrets and
// with a hint for the usual causes. The result unwraps to err.
func (s *Influx) explain(err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	msg := err.Error()
	if errors.As(err, &ue) { // drop "Post "http://...?org=...": "
		msg = ue.Err.Error()
	}
	msg = strings.Join(strings.Fields(msg), " ")
	msg = strings.TrimPrefix(msg, "error ")
	var he *ihttp.Error
	if errors.As(err, &he) && he.StatusCode != 0 {
		if he.Err == nil && he.Message == "" { // the client lost the body: say what the status means
			msg = fmt.Sprintf("%d %s", he.StatusCode, http.StatusText(he.StatusCode))
		} else if !strings.Contains(msg, strconv.Itoa(he.StatusCode)) {
			msg = fmt.Sprintf("%d %s", he.StatusCode, msg)
		}
	}
	low := strings.ToLower(msg)
	switch {
	case errors.As(err, &he) && (he.StatusCode == 401 || he.StatusCode == 403 || deniedAccess(low)):
		msg += " (check the token; on InfluxDB 1.8 it is user:password)"
	case missingBucket(low) || strings.Contains(low, "retention policy") || (errors.As(err, &he) && he.StatusCode == 404):
		msg += " (does the bucket exist? on InfluxDB 1.8 the bucket is database/retention-policy)"
	case strings.Contains(low, "connection refused") || strings.Contains(low, "no such host"):
		msg += " (is InfluxDB running at that URL?)"
	}
	for _, sec := range s.secrets {
		msg = strings.ReplaceAll(msg, sec, "[redacted]")
	}
	return &cleanError{msg: msg, err: err}
}

// cleanError carries a printable message for an error whose own text may
// hold a URL with a query string or credentials.
type cleanError struct {
	msg string
	err error
}

func (e *cleanError) Error() string { return e.msg }
func (e *cleanError) Unwrap() error { return e.err }
