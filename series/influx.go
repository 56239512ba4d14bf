package series

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
	"sync"
	"sync/atomic"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	"github.com/influxdata/influxdb-client-go/v2/api/query"
)

// DefaultSpoolMaxBytes caps the spool unless InfluxOptions says otherwise.
const DefaultSpoolMaxBytes int64 = 64 << 20

// replayBatch is how many spooled lines go into one write request.
const replayBatch = 5000

// ErrSpoolFull is returned (wrapped) by Influx.Write when InfluxDB cannot take
// the points and the spool has reached its cap: those points are not stored.
var ErrSpoolFull = errors.New("spool is full")

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
	// SpoolPath is the file where points wait while InfluxDB is unreachable.
	// Empty means no spool: Write then returns transient errors as they are
	// (for read-only users such as policygen).
	SpoolPath string
	// DeadLetterPath receives points InfluxDB refused for good (400, 401,
	// 403, 404). Empty means SpoolPath+".dead" (or none without a spool).
	DeadLetterPath string
	// SpoolMaxBytes caps the spool; 0 means DefaultSpoolMaxBytes.
	SpoolMaxBytes int64
	// RequestTimeout bounds one HTTP request; 0 means 20 s.
	RequestTimeout time.Duration
	// Warn receives non-fatal problems (points spooled, torn spool lines);
	// msg is lowercase, args are slog-style key/value pairs. Nil discards.
	Warn func(msg string, args ...any)

	// StartUnreachable lets a writer (the sampler) start during an outage:
	// when the read check fails only because the server cannot be reached
	// (connection refused or reset, timeout, 408, 429, 5xx) and a spool is
	// configured, OpenInflux warns and returns the store, whose writes go to
	// the spool until the server answers. A wrong token, a missing bucket or
	// a host that does not resolve are still errors.
	StartUnreachable bool
}

// Influx stores samples in InfluxDB 1.8+ or 2.x through blocking writes and
// Flux queries.
//
// Nothing is lost when InfluxDB is down: a write that fails for a transient
// reason (connection refused, timeout, 408, 429, 5xx) is appended to the
// spool file (line protocol, fsynced) and Write returns nil. Every Write first
// replays the spool, in order and in batches of 5000 lines, before its own
// points, and empties the spool once all of it went through. Points carry
// fixed timestamps, so a replay that is cut short and done again rewrites
// the same points instead of counting them twice.
//
// Points InfluxDB refuses for good (400, 401, 403, 404, 413) are appended to
// the dead-letter file and Write returns a *RefusedError. A refused batch may
// hold points the server did accept (a 400 "partial write"); replaying the
// dead-letter file with Import after fixing the cause rewrites those
// harmlessly.
//
// The spool has a cap (SpoolMaxBytes). When InfluxDB is unreachable and the
// spool is full, Write refuses the new points with an error wrapping
// ErrSpoolFull: the points already spooled are kept and nothing is dropped
// silently. Write also fails when the spool cannot be written.
//
// Probes and Hourly include points still waiting in the spool, so a store
// reads its own writes during an outage, and so does the next process that
// opens the same spool: the server's points in range are merged with the
// spooled ones, and a spooled point replaces a server point of the same
// series (measurement, lane and kind) and time, a later spool line an
// earlier one. The server is still asked first: when it cannot be read, the
// read fails as it would without a spool rather than return the spool alone.
// With a spool, a read waits for a Write in progress (and the reverse), so a
// replay cannot move points out of the spool between the two reads.
type Influx struct {
	client   influxdb2.Client
	writeAPI api.WriteAPIBlocking
	queryAPI api.QueryAPI
	bucket   string
	where    string   // "influx URL bucket B", safe to print
	secrets  []string // strings never to print
	warn     func(string, ...any)
	spoolMax int64
	deadPath string

	// mu serialises writes, so the spool keeps its order; reads of a store
	// with a spool hold it shared so that they see the server and the spool
	// at one moment.
	mu     sync.RWMutex
	enc    encoder
	spool  *appendFile // nil without a spool
	dead   *appendFile // opened on first use
	closed bool

	depth atomic.Int64 // points in the spool
}

var _ Store = (*Influx)(nil)

// RefusedError reports points InfluxDB refused for good. They are in the
// dead-letter file (if any), not lost, but not stored either.
type RefusedError struct {
	Points     int
	DeadLetter string // empty when there is no dead-letter file
	Err        error
}

func (e *RefusedError) Error() string {
	if e.DeadLetter == "" {
		return fmt.Sprintf("influx refused %d points: %v", e.Points, e.Err)
	}
	return fmt.Sprintf("influx refused %d points: %v; moved to dead-letter file %s", e.Points, e.Err, e.DeadLetter)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// OpenInflux connects to InfluxDB and checks, with a real read of the bucket,
// that the URL, token and bucket work: Ping and Health would not check
// auth. Each failure is one line naming the URL (without credentials) and the
// bucket, never the token. It then opens the spool (taking its lock, so two
// samplers cannot share one) and counts the points waiting in it.
func OpenInflux(ctx context.Context, o InfluxOptions) (*Influx, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("influx url %q: want http(s)://host:port", redactURL(o.URL))
	}
	if o.Bucket == "" {
		return nil, errors.New("influx: bucket is empty (on InfluxDB 1.8 use database/retention-policy, e.g. lanewatch/autogen)")
	}
	s := &Influx{
		bucket:   o.Bucket,
		warn:     o.Warn,
		spoolMax: cmp.Or(o.SpoolMaxBytes, DefaultSpoolMaxBytes),
		deadPath: o.DeadLetterPath,
	}
	if s.warn == nil {
		s.warn = func(string, ...any) {}
	}
	s.where = fmt.Sprintf("influx %s bucket %s", redactURL(o.URL), o.Bucket)
	if o.Token != "" {
		s.secrets = append(s.secrets, o.Token)
		if _, pw, ok := strings.Cut(o.Token, ":"); ok && len(pw) >= 4 {
			s.secrets = append(s.secrets, pw)
		}
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		s.secrets = append(s.secrets, pw)
	}
	timeout := cmp.Or(o.RequestTimeout, 20*time.Second)
	opts := influxdb2.DefaultOptions().
		SetHTTPRequestTimeout(uint(max(timeout/time.Second, 1))).
		SetLogLevel(0)
	s.client = influxdb2.NewClientWithOptions(o.URL, o.Token, opts)
	s.writeAPI = s.client.WriteAPIBlocking(o.Org, o.Bucket)
	s.queryAPI = s.client.QueryAPI(o.Org)

	check := fmt.Sprintf("from(bucket: %s) |> range(start: -1m) |> limit(n: 1)", fluxString(o.Bucket))
	if err := s.query(ctx, check, func(*query.FluxRecord) error { return nil }); err != nil {
		if !(o.StartUnreachable && o.SpoolPath != "" && unreachable(err)) {
			s.client.Close()
			return nil, fmt.Errorf("%s: read check: %w", s.where, s.explain(err))
		}
		s.warn("influx unreachable at start; points go to the spool until it answers",
			"store", s.where, "err", s.explain(err).Error())
	}
	if o.SpoolPath != "" {
		if s.deadPath == "" {
			s.deadPath = o.SpoolPath + ".dead"
		}
		if err := s.openSpool(o.SpoolPath); err != nil {
			s.client.Close()
			return nil, fmt.Errorf("%s: spool: %w", s.where, err)
		}
	}
	return s, nil
}

func (s *Influx) openSpool(path string) error {
	sp, err := openAppend(path, s.warn)
	if err != nil {
		return err
	}
	var n int64
	err = sp.read(func(_ int64, line []byte, terminated bool) error {
		if terminated && kindOf(line) != kindSkip {
			n++
		}
		return nil
	})
	if err != nil {
		_ = sp.close()
		return err
	}
	s.spool = sp
	s.depth.Store(n)
	if n > 0 {
		s.warn("influx spool holds points from an earlier run; they are replayed at the next write", "spool", path, "points", n)
	}
	return nil
}

// SpoolDepth returns how many points wait in the spool for replay.
func (s *Influx) SpoolDepth() int { return int(s.depth.Load()) }

// Write stores one round. See the type's doc for the spool and dead-letter
// contract: nil means every point is in InfluxDB or durably spooled.
func (s *Influx) Write(ctx context.Context, probes []Probe, hourly []Hourly) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%s: write: %w", s.where, os.ErrClosed)
	}
	body, err := s.enc.round(probes, hourly)
	if err != nil {
		return fmt.Errorf("%s: write: %w", s.where, err)
	}
	body = bytes.Clone(body)
	points := len(probes) + len(hourly)

	var refused []error
	if s.spool != nil && s.depth.Load() > 0 {
		rerr, err := s.replay(ctx)
		if rerr != nil {
			refused = append(refused, rerr)
		}
		if err != nil { // InfluxDB still unreachable: queue the new points behind the old
			if points > 0 {
				if serr := s.toSpool(body, points, err); serr != nil {
					refused = append(refused, serr)
				}
			}
			return joinErrors(refused)
		}
	}
	if points == 0 {
		return joinErrors(refused)
	}
	err = s.send(ctx, body)
	switch {
	case err == nil:
	case isTransient(err):
		if s.spool == nil {
			refused = append(refused, fmt.Errorf("%s: write: %w", s.where, s.explain(err)))
		} else if serr := s.toSpool(body, points, err); serr != nil {
			refused = append(refused, serr)
		}
	default:
		refused = append(refused, fmt.Errorf("%s: write: %w", s.where, s.refuse(body, points, err)))
	}
	return joinErrors(refused)
}

// send writes whole lines (each ending in a newline) in one request.
func (s *Influx) send(ctx context.Context, body []byte) error {
	if len(body) == 0 {
		return nil
	}
	return s.writeAPI.WriteRecord(ctx, string(bytes.TrimSuffix(body, []byte{'\n'})))
}

// toSpool queues points that could not be written because of cause.
func (s *Influx) toSpool(body []byte, points int, cause error) error {
	size, err := s.spool.size()
	if err != nil {
		return fmt.Errorf("%s: spool %s: %w", s.where, s.spool.path, err)
	}
	if size+int64(len(body)) > s.spoolMax {
		return fmt.Errorf("%s: %d points not stored: %w (%s holds %d bytes, cap %d) while InfluxDB fails: %w",
			s.where, points, ErrSpoolFull, s.spool.path, size, s.spoolMax, s.explain(cause))
	}
	if err := s.spool.append(body); err != nil {
		return fmt.Errorf("%s: %d points not stored: spool %s: %w", s.where, points, s.spool.path, err)
	}
	depth := s.depth.Add(int64(points))
	s.warn("influx write failed; points spooled for replay", "influx", s.where, "points", points,
		"spooled", depth, "err", s.explain(cause).Error())
	if used := size + int64(len(body)); used*10 >= s.spoolMax*8 {
		s.warn("INFLUX SPOOL NEARLY FULL: new points will be refused at the cap; fix InfluxDB or raise store.spool_max_bytes",
			"spool", s.spool.path, "bytes", used, "cap", s.spoolMax)
	}
	return nil
}

// refuse moves refused points to the dead-letter file and describes that.
func (s *Influx) refuse(body []byte, points int, cause error) error {
	re := &RefusedError{Points: points, Err: s.explain(cause)}
	if s.deadPath == "" {
		return re
	}
	if s.dead == nil {
		d, err := openAppend(s.deadPath, s.warn)
		if err != nil {
			return joinErrors([]error{re, fmt.Errorf("dead-letter file: %w; points lost", err)})
		}
		s.dead = d
	}
	if err := s.dead.append(body); err != nil {
		return joinErrors([]error{re, fmt.Errorf("dead-letter file %s: %w; points lost", s.deadPath, err)})
	}
	re.DeadLetter = s.deadPath
	return re
}

// replay writes the spool to InfluxDB in order. refused reports spooled
// points that InfluxDB refused for good (now in the dead-letter file). A
// non-nil err is the transient failure that stopped the replay: the spool is
// then kept whole, to be replayed again.
func (s *Influx) replay(ctx context.Context) (refused, err error) {
	var batch []byte
	lines := 0
	var refusals []error
	flush := func() error {
		if lines == 0 {
			return nil
		}
		err := s.send(ctx, batch)
		switch {
		case err == nil:
		case isTransient(err):
			return err
		default:
			refusals = append(refusals, s.refuse(batch, lines, err))
		}
		batch, lines = batch[:0], 0
		return nil
	}
	err = s.spool.read(func(_ int64, line []byte, terminated bool) error {
		if !terminated || kindOf(line) == kindSkip {
			return nil
		}
		batch = append(append(batch, line...), '\n')
		lines++
		if lines == replayBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if len(refusals) > 0 {
		refused = fmt.Errorf("%s: replaying spool: %w", s.where, joinErrors(refusals))
	}
	if err != nil {
		return refused, err
	}
	if terr := s.spool.truncate(); terr != nil {
		// Everything went through; an untruncated spool is replayed again
		// later, which rewrites the same points.
		s.warn("influx spool replayed but could not be emptied", "spool", s.spool.path, "err", terr.Error())
		return refused, nil
	}
	n := s.depth.Swap(0)
	s.warn("influx spool replayed", "influx", s.where, "points", n)
	return refused, nil
}

// isTransient reports whether a write error may go away by itself: no HTTP
// status (network, timeout, cancelled), 408, 429 or 5xx.
// unreachable reports whether err says the server could not be reached or
// answered with a passing failure, as opposed to a wrong URL, token or bucket.
func unreachable(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return false
	}
	return isTransient(err)
}

func isTransient(err error) bool {
	var he *ihttp.Error
	if errors.As(err, &he) && he.StatusCode != 0 {
		return he.StatusCode == 408 || he.StatusCode == 429 || he.StatusCode >= 500
	}
	return true
}

// Probes returns the probe points with from <= time < to, sorted by time
// then lane, including the points waiting in the spool.
func (s *Influx) Probes(ctx context.Context, from, to time.Time) ([]Probe, error) {
	return readPoints(ctx, s, "probes", MeasurementProbe, probeFields, kindProbe, from, to, decodeProbe, probeKey,
		func(r *query.FluxRecord) Probe {
			p := Probe{Lane: str(r, tagLane), Kind: str(r, tagKind), Time: r.Time().UTC()}
			p.QueueS, _ = r.ValueByKey(fieldQueueS).(float64)
			p.GenS, _ = r.ValueByKey(fieldGenS).(float64)
			p.HeadersS, _ = r.ValueByKey(fieldHeadersS).(float64)
			p.Tokens, _ = r.ValueByKey(fieldTokens).(int64)
			p.OK, _ = r.ValueByKey(fieldOK).(bool)
			p.Outcome, _ = r.ValueByKey(fieldOutcome).(string)
			p.Status, _ = r.ValueByKey(fieldStatus).(int64)
			return p
		})
}

// Hourly returns the hourly points with from <= hour < to, sorted by hour
// then lane, including the points waiting in the spool.
func (s *Influx) Hourly(ctx context.Context, from, to time.Time) ([]Hourly, error) {
	return readPoints(ctx, s, "hourly", MeasurementHourly, hourlyFields, kindHourly, from, to, decodeHourly, hourlyKey,
		func(r *query.FluxRecord) Hourly {
			h := Hourly{Lane: str(r, tagLane), Kind: str(r, tagKind), Hour: r.Time().UTC()}
			h.WorstQueueS, _ = r.ValueByKey(fieldWorstQueueS).(float64)
			h.WorstGenS, _ = r.ValueByKey(fieldWorstGenS).(float64)
			h.MinTokPerS, _ = r.ValueByKey(fieldMinTokPerS).(float64)
			h.Samples, _ = r.ValueByKey(fieldSamples).(int64)
			h.Failures, _ = r.ValueByKey(fieldFailures).(int64)
			h.Eligible, _ = r.ValueByKey(fieldEligible).(bool)
			return h
		})
}

// readPoints reads one measurement's points with from <= time < to from the
// server, merges the points waiting in the spool, and sorts them by time,
// lane and kind. With a spool it holds s.mu shared across both reads, so a
// replay cannot move points from the spool to the server in between.
func readPoints[T any](ctx context.Context, s *Influx, what, measurement string, fields []string, kind pointKind,
	from, to time.Time, decode func([]byte) (T, error), key func(*T) pointKey, fromRecord func(*query.FluxRecord) T) ([]T, error) {
	l := newLatest(key)
	if !from.Before(to) {
		return l.out, nil
	}
	if s.spool != nil {
		s.mu.RLock()
		defer s.mu.RUnlock()
		if s.closed {
			return nil, fmt.Errorf("%s: read %s: %w", s.where, what, os.ErrClosed)
		}
	}
	fromNs, toNs := clampNano(from), clampNano(to)
	err := s.query(ctx, s.flux(measurement, fields, from, to), func(r *query.FluxRecord) error {
		l.putIn(fromRecord(r), fromNs, toNs) // Flux on InfluxDB 1.8 includes points at stop
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", s.where, what, s.explain(err))
	}
	if err := mergeSpooled(ctx, s, l, kind, from, to, decode); err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", s.where, what, err)
	}
	return l.sorted(), nil
}

// mergeSpooled adds to server (the points read from InfluxDB) the spooled
// points of measurement want with from <= time < to. The spool is newer than
// the server: a spooled point replaces a point with the same key, and a later
// spool line an earlier one. s.mu must be held (shared is enough), so that
// no write or replay changes the spool meanwhile. Lines that do not decode
// are skipped with a warning (a replay dead-letters them).
func mergeSpooled[T any](ctx context.Context, s *Influx, server *latest[T], want pointKind, from, to time.Time,
	decode func([]byte) (T, error)) error {
	if s.spool == nil || s.depth.Load() == 0 {
		return nil
	}
	fromNs, toNs := clampNano(from), clampNano(to)
	err := s.spool.read(func(n int64, line []byte, terminated bool) error {
		if n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !terminated || kindOf(line) != want {
			return nil
		}
		if ns, ok := lineTime(line); ok && (ns < fromNs || ns >= toNs) {
			return nil
		}
		p, err := decode(line)
		if err != nil {
			s.warn("skipped corrupt spool line", "spool", s.spool.path, "line", n, "err", err.Error())
			return nil
		}
		server.putIn(p, fromNs, toNs)
		return nil
	})
	if err != nil {
		return fmt.Errorf("spool %s: %w", s.spool.path, err)
	}
	return nil
}

func str(r *query.FluxRecord, key string) string {
	v, _ := r.ValueByKey(key).(string)
	return v
}

// flux builds the query for one measurement: a bounded range, the
// measurement and field filters first, then one row per point.
func (s *Influx) flux(measurement string, fields []string, from, to time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "from(bucket: %s)\n", fluxString(s.bucket))
	fmt.Fprintf(&b, "  |> range(start: %s, stop: %s)\n", fluxTime(from), fluxTime(to))
	fmt.Fprintf(&b, "  |> filter(fn: (r) => r._measurement == %s)\n", fluxString(measurement))
	b.WriteString("  |> filter(fn: (r) => ")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(" or ")
		}
		fmt.Fprintf(&b, "r._field == %s", fluxString(f))
	}
	b.WriteString(")\n")
	b.WriteString("  |> pivot(rowKey: [\"_time\"], columnKey: [\"_field\"], valueColumn: \"_value\")\n")
	b.WriteString("  |> keep(columns: [\"_time\", \"lane\", \"kind\"")
	for _, f := range fields {
		fmt.Fprintf(&b, ", %s", fluxString(f))
	}
	b.WriteString("])\n")
	return b.String()
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

// fluxTime writes t as a Flux time literal, clamped to the range InfluxDB stores.
func fluxTime(t time.Time) string {
	return time.Unix(0, clampNano(t)).UTC().Format(time.RFC3339Nano)
}

// Close releases the client and the spool lock.
func (s *Influx) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.client.Close()
	var errs []error
	if s.spool != nil {
		errs = append(errs, s.spool.close())
	}
	if s.dead != nil {
		errs = append(errs, s.dead.close())
	}
	if err := joinErrors(errs); err != nil {
		return fmt.Errorf("%s: close: %w", s.where, err)
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
	case errors.As(err, &he) && (he.StatusCode == 401 || he.StatusCode == 403):
		msg += " (check the token; on InfluxDB 1.8 it is user:password)"
	case strings.Contains(low, "no database") || strings.Contains(low, "database not found") ||
		strings.Contains(low, "retention policy") || (errors.As(err, &he) && he.StatusCode == 404):
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

// redactURL returns raw without user info, query or fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	u.User = nil
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// joinErrors is errors.Join on one line ("; " between the errors), so a
// caller can print it as one line. It returns nil when all errs are nil.
func joinErrors(errs []error) error {
	var nonNil []error
	for _, err := range errs {
		if err != nil {
			nonNil = append(nonNil, err)
		}
	}
	switch len(nonNil) {
	case 0:
		return nil
	case 1:
		return nonNil[0]
	}
	return &multiError{errs: nonNil}
}

type multiError struct{ errs []error }

func (e *multiError) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e *multiError) Unwrap() []error { return e.errs }
