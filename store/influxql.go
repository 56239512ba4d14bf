package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	"github.com/influxdata/influxdb-client-go/v2/api/query"
)

// Query languages of an Influx store's reads.
const (
	QueryFlux     = "flux"
	QueryInfluxQL = "influxql"
)

// row is one point of a read, whichever language read it.
type row interface {
	at() time.Time
	value(key string) any
}

type fluxRow struct{ r *query.FluxRecord }

func (f fluxRow) at() time.Time             { return f.r.Time() }
func (f fluxRow) value(key string) any      { return f.r.ValueByKey(key) }
func str(r row, key string) string          { v, _ := r.value(key).(string); return v }
func intOf(r row, key string) (int64, bool) { return intValue(r.value(key)) }

func intValue(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	}
	return 0, false
}

func numberOf(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// qlRow is a row of an InfluxQL result: its columns by name.
type qlRow struct {
	cols map[string]int
	vals []any
}

func (q qlRow) value(key string) any {
	if i, ok := q.cols[key]; ok && i < len(q.vals) {
		return q.vals[i]
	}
	return nil
}

func (q qlRow) at() time.Time {
	ns, _ := intOf(q, "time")
	return time.Unix(0, ns).UTC()
}

// qlSelect is the InfluxQL SELECT of one measurement's points in span
// (InfluxDB 1.x, or 2.x's v1 /query): the fields and the tags as columns,
// without GROUP BY, which InfluxDB 1.8 answers several times faster than a
// Flux pivot over thousands of store.
func qlSelect(measurement string, fields []string, span [2]int64, m *matcher) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for _, f := range fields {
		b.WriteString(qlIdent(f) + ", ")
	}
	fmt.Fprintf(&b, "%s, %s, %s FROM %s WHERE time >= %d AND time < %d",
		qlIdent(TagLane), qlIdent(TagKind), qlIdent(TagSite), qlIdent(measurement), span[0], span[1])
	qlSites(&b, m)
	if m.lanes != nil && len(m.lanes) <= maxPushedLanes {
		var or []string
		for _, lane := range slices.Sorted(maps.Keys(m.lanes)) {
			or = append(or, qlIdent(TagLane)+" = "+qlString(lane))
		}
		b.WriteString(" AND (" + strings.Join(or, " OR ") + ")")
	}
	return b.String()
}

// qlSites adds to a WHERE clause the condition that selects m's sites,
// when it names any.
func qlSites(b *strings.Builder, m *matcher) {
	if m.sites == nil {
		return
	}
	var or []string
	for _, site := range slices.Sorted(maps.Keys(m.sites)) {
		or = append(or, qlIdent(TagSite)+" = "+qlString(site)) // '' matches points without the tag
	}
	b.WriteString(" AND (" + strings.Join(or, " OR ") + ")")
}

// qlClient reads through an InfluxQL /query endpoint: base is the
// server's URL, db and rp the database and retention policy ("": the
// default), token the credentials ("" for none).
type qlClient struct {
	base, db, rp string
	token        string
	http         *http.Client
	loopback     bool // the server is on this host: answers uncompressed
}

// isLoopback reports whether host (a URL's hostname) is this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// query runs one InfluxQL statement through /query, asking for JSON, and
// hands each row to put.
func (s *qlClient) query(ctx context.Context, stmt string, put func(row)) error {
	return s.queryTyped(ctx, stmt, put, nil, nil)
}

// queryTyped runs one InfluxQL statement through /query. With typed set it
// asks for MessagePack (JSON if the server has none) and hands a
// MessagePack answer's columns to plan, once per series, and each row's
// values to typed; a JSON answer's rows go to put. Errors are shaped as
// the client library's, so that classify tells a passing failure from a
// lasting one.
func (s *qlClient) queryTyped(ctx context.Context, stmt string, put func(row), plan func([]string), typed func([]qlValue)) error {
	// Chunked: the server streams the rows as JSON objects one after the
	// other, and its max-row-limit, which cuts a plain answer short with
	// only "partial": true to say so, does not apply.
	form := url.Values{"q": {stmt}, "db": {s.db}, "epoch": {"ns"}, "chunked": {"true"}, "chunk_size": {"10000"}}
	if s.rp != "" {
		form.Set("rp", s.rp)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/query", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if typed != nil {
		req.Header.Set("Accept", qlMsgpack+", application/json;q=0.5")
	}
	if s.loopback {
		// Go asks for gzip by itself; on loopback that costs influxd a
		// quarter more CPU (a month of hourly records: 6.5 s, not 5.2 s)
		// and saves nothing.
		req.Header.Set("Accept-Encoding", "identity")
	}
	if s.token != "" {
		// The same header as the client library's writes: InfluxDB 1.8
		// takes "Token user:password", 2.x an API token. (Basic auth would
		// put the credentials base64-encoded where an echoing proxy could
		// return them unredacted.)
		req.Header.Set("Authorization", "Token "+s.token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	msgpack := typed != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), qlMsgpack)
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		text := ""
		if msgpack {
			text = cmp.Or(qlMsgpackErrorText(body), resp.Header.Get("X-Influxdb-Error"))
		}
		return qlError(resp.StatusCode, cmp.Or(text, qlErrorText(body)))
	}
	if msgpack {
		err := qlReadMsgpack(resp.Body, plan, typed)
		if ae := (*qlAnswerError)(nil); errors.As(err, &ae) {
			return qlError(http.StatusBadRequest, ae.msg)
		}
		return err
	}
	tail := &tailBuffer{}
	dec := json.NewDecoder(io.TeeReader(resp.Body, tail))
	dec.UseNumber()
	for {
		var chunk struct {
			Error   string `json:"error"`
			Results []struct {
				Error  string `json:"error"`
				Series []struct {
					Columns []string `json:"columns"`
					Values  [][]any  `json:"values"`
				} `json:"series"`
			} `json:"results"`
		}
		if err := dec.Decode(&chunk); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("influxql response: %w (after %q)", err, tail.String())
		}
		if chunk.Error != "" {
			return qlError(http.StatusBadRequest, chunk.Error)
		}
		for _, r := range chunk.Results {
			if r.Error != "" {
				return qlError(http.StatusBadRequest, r.Error)
			}
			for _, sr := range r.Series {
				cols := make(map[string]int, len(sr.Columns))
				for i, c := range sr.Columns {
					cols[c] = i
				}
				for _, v := range sr.Values {
					put(qlRow{cols: cols, vals: v})
				}
			}
		}
	}
}

// qlError shapes an InfluxQL failure as the client library's errors, so
// that explain and classify treat both languages alike: "401 Unauthorized:
// authorization failed".
func qlError(status int, text string) error {
	if text == "" {
		text = "-"
	}
	return &ihttp.Error{StatusCode: status, Code: http.StatusText(status), Message: text}
}

// qlErrorText is the error an InfluxQL endpoint put in its body.
func qlErrorText(body []byte) string {
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Error != "" || e.Message != "") {
		return strings.TrimSpace(e.Error + " " + e.Message)
	}
	return strings.TrimSpace(string(body))
}

// qlIdent quotes an InfluxQL identifier.
func qlIdent(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// qlString quotes an InfluxQL string literal.
func qlString(s string) string {
	return `'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + `'`
}

// splitBucket splits a 1.x bucket "db/rp" into its database and retention
// policy ("" for the default).
func splitBucket(bucket string) (db, rp string) {
	db, rp, _ = strings.Cut(bucket, "/")
	return db, rp
}

// tailBuffer keeps the last bytes written to it, for an error message.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 160 {
		t.b = t.b[len(t.b)-160:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
