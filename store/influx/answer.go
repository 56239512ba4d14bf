package influx

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	lp "github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/lanewatch/lanewatch/store"
	"github.com/tinylib/msgp/msgp"
)

// An answer of /query comes chunked (max-row-limit does not apply), as
// MessagePack when the server has it (1.x: cheaper on both sides,
// BENCHMARKS.md), else JSON.
const msgpack = "application/x-msgpack"

// rows takes one series of an answer and returns what takes each row's
// values (valid during the call), and nil at each chunk's end.
type rows func(stmt int, cols []string) (func([]store.Value) error, error)

// query runs the statements in one request through /query. Errors are
// shaped as the client library's.
func (s *Store) query(ctx context.Context, stmts []string, series rows) error {
	form := url.Values{"q": {strings.Join(stmts, "; ")}, "db": {s.db}, "epoch": {"ns"}, "chunked": {"true"}, "chunk_size": {"10000"}}
	if s.rp != "" {
		form.Set("rp", s.rp)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/query", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", msgpack+", application/json;q=0.5")
	if s.loopback {
		// gzip on loopback costs influxd CPU and saves nothing.
		req.Header.Set("Accept-Encoding", "identity")
	}
	if s.token != "" {
		// As the client library's writes (basic auth could be echoed unredacted).
		req.Header.Set("Authorization", "Token "+s.token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	packed := strings.HasPrefix(resp.Header.Get("Content-Type"), msgpack)
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		text := resp.Header.Get("X-Influxdb-Error")
		var e struct{ Error, Message string }
		switch {
		case packed:
			text = cmp.Or(packedError(body), text)
		case json.Unmarshal(body, &e) == nil && e.Error+e.Message != "":
			text = strings.TrimSpace(e.Error + " " + e.Message)
		default:
			text = cmp.Or(strings.TrimSpace(string(body)), text)
		}
		return answerError(resp.StatusCode, text)
	}
	if packed {
		return (&unpacker{r: msgp.NewReaderSize(resp.Body, 64<<10), stmts: len(stmts)}).answer(series)
	}
	return jsonAnswer(resp.Body, len(stmts), series)
}

// answerError shapes a failure, or an error the server put in a 200
// answer (400), as the client library's errors.
func answerError(status int, text string) error {
	return &ihttp.Error{StatusCode: status, Code: http.StatusText(status), Message: cmp.Or(text, "-")}
}

// jsonAnswer reads a JSON answer: one object per chunk.
func jsonAnswer(body io.Reader, stmts int, series rows) error {
	dec := json.NewDecoder(body)
	var vals []store.Value
	for {
		var chunk struct {
			Error   string
			Results []struct {
				StatementID int `json:"statement_id"`
				Error       string
				Series      []struct {
					Columns []string
					Values  json.RawMessage
				}
			}
		}
		if err := dec.Decode(&chunk); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("influxql response: %w", err)
		}
		if chunk.Error != "" {
			return answerError(http.StatusBadRequest, chunk.Error)
		}
		for _, r := range chunk.Results {
			if r.Error != "" {
				return answerError(http.StatusBadRequest, r.Error)
			}
			for _, sr := range r.Series {
				row, err := seriesOf(series, r.StatementID, stmts, sr.Columns)
				if err == nil && row != nil {
					if vals, err = jsonRows(sr.Values, vals, row); err == nil {
						err = row(nil) // the chunk's end
					}
				}
				if err != nil {
					return err
				}
			}
		}
	}
}

func seriesOf(series rows, stmt, stmts int, cols []string) (func([]store.Value) error, error) {
	if stmt < 0 || stmt >= stmts {
		return nil, fmt.Errorf("influxql response: statement %d of %d", stmt, stmts)
	}
	return series(stmt, cols)
}

var errValues = errors.New("influxql response: values are not an array of arrays of scalars")

// jsonRows hands row the values of each row of raw, valid JSON.
func jsonRows(raw []byte, vals []store.Value, row func([]store.Value) error) ([]store.Value, error) {
	i := skip(raw, 0)
	if i == len(raw) || raw[i] != '[' {
		return vals, errValues
	}
	for i = skip(raw, i+1); i < len(raw) && raw[i] != ']'; i = skip(raw, i) {
		if raw[i] == ',' {
			i++
			continue
		}
		if raw[i] != '[' {
			return vals, errValues
		}
		vals = vals[:0]
		for i = skip(raw, i+1); i < len(raw) && raw[i] != ']'; i = skip(raw, i) {
			if raw[i] == ',' {
				i++
				continue
			}
			j := i + 1
			if raw[i] == '"' {
				for j < len(raw) && raw[j] != '"' {
					if raw[j] == '\\' {
						j++
					}
					j++
				}
				j++
			} else {
				for j < len(raw) && raw[j] != ',' && raw[j] != ']' && raw[j] > ' ' {
					j++
				}
			}
			if j > len(raw) {
				return vals, errValues
			}
			vals = append(vals, jsonValue(raw[i:j]))
			i = j
		}
		if i == len(raw) {
			return vals, errValues
		}
		if err := row(vals); err != nil {
			return vals, err
		}
		i++
	}
	return vals, nil
}

func skip(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonValue reads one JSON scalar; an integral number as an integer.
func jsonValue(tok []byte) store.Value {
	switch {
	case tok[0] == '"':
		if strings.IndexByte(string(tok), '\\') < 0 {
			return store.Value{Kind: lp.String, S: tok[1 : len(tok)-1]}
		}
		var s string
		_ = json.Unmarshal(tok, &s)
		return store.Value{Kind: lp.String, S: []byte(s)}
	case string(tok) == "true" || string(tok) == "false":
		return store.Value{Kind: lp.Bool, B: tok[0] == 't'}
	}
	if i, err := strconv.ParseInt(string(tok), 10, 64); err == nil {
		return store.Value{Kind: lp.Int, I: i}
	}
	if f, err := strconv.ParseFloat(string(tok), 64); err == nil {
		return store.Value{Kind: lp.Float, F: f}
	}
	return store.Value{} // null
}

// unpacker reads a MessagePack answer, one map per chunk.
type unpacker struct {
	r       *msgp.Reader
	stmts   int
	stmt    int
	scratch []byte
	cols    []string
	vals    []store.Value
	strs    [][]byte // per column, its string's buffer
}

func (d *unpacker) answer(series rows) error {
	for {
		if _, err := d.r.R.Peek(1); errors.Is(err, io.EOF) {
			return nil
		}
		err := d.object("results", func() error {
			d.stmt = 0
			return d.object("series", func() error { return d.series(series) })
		})
		if he := (*ihttp.Error)(nil); err != nil && !errors.As(err, &he) {
			return fmt.Errorf("influxql response: %w", err)
		}
		if err != nil {
			return err
		}
	}
}

func (d *unpacker) key() (string, error) {
	b, err := d.r.ReadMapKey(d.scratch[:0])
	d.scratch = b
	return string(b), err
}

// object reads a map: each element of the array at list, the server's
// "error", statement_id; other keys are skipped.
func (d *unpacker) object(list string, each func() error) error {
	n, err := d.r.ReadMapHeader()
	for ; err == nil && n > 0; n-- {
		var k string
		if k, err = d.key(); err != nil {
			break
		}
		switch k {
		case "error":
			msg, err := d.r.ReadString()
			if err != nil {
				return err
			}
			return answerError(http.StatusBadRequest, msg)
		case "statement_id":
			var id int
			id, err = d.r.ReadInt()
			d.stmt = id
		case list:
			var m uint32
			m, err = d.r.ReadArrayHeader()
			for ; err == nil && m > 0; m-- {
				err = each()
			}
		default:
			err = d.r.Skip()
		}
	}
	return err
}

// series reads one series, its columns before its values.
func (d *unpacker) series(series rows) error {
	n, err := d.r.ReadMapHeader()
	d.cols = d.cols[:0]
	var row func([]store.Value) error
	for ; err == nil && n > 0; n-- {
		var k string
		if k, err = d.key(); err != nil {
			break
		}
		switch k {
		case "columns":
			var nc uint32
			nc, err = d.r.ReadArrayHeader()
			for ; err == nil && nc > 0; nc-- {
				var c string
				c, err = d.r.ReadString()
				d.cols = append(d.cols, c)
			}
		case "values":
			if row == nil {
				if row, err = seriesOf(series, d.stmt, d.stmts, d.cols); err != nil {
					return err
				}
			}
			var nv uint32
			nv, err = d.r.ReadArrayHeader()
			for ; err == nil && nv > 0; nv-- {
				if err = d.row(); err == nil && row != nil {
					err = row(d.vals)
				}
			}
			if err == nil && row != nil {
				err = row(nil) // the chunk's end
			}
		default: // name, tags (none without GROUP BY), partial
			err = d.r.Skip()
		}
	}
	return err
}

// row reads one row's values into d.vals.
func (d *unpacker) row() error {
	nv, err := d.r.ReadArrayHeader()
	d.vals = d.vals[:0]
	for ; err == nil && nv > 0; nv-- {
		var v store.Value
		var t msgp.Type
		if t, err = d.r.NextType(); err != nil {
			break
		}
		switch t {
		case msgp.Float64Type, msgp.Float32Type:
			v.Kind = lp.Float
			v.F, err = d.r.ReadFloat64()
		case msgp.IntType:
			v.Kind = lp.Int
			v.I, err = d.r.ReadInt64()
		case msgp.UintType:
			var u uint64
			if u, err = d.r.ReadUint64(); u <= math.MaxInt64 {
				v.Kind, v.I = lp.Int, int64(u)
			} else {
				v.Kind, v.F = lp.Float, float64(u)
			}
		case msgp.BoolType:
			v.Kind = lp.Bool
			v.B, err = d.r.ReadBool()
		case msgp.StrType:
			i := len(d.vals)
			for len(d.strs) <= i {
				d.strs = append(d.strs, nil)
			}
			d.strs[i], err = d.r.ReadStringAsBytes(d.strs[i][:0])
			v.Kind, v.S = lp.String, d.strs[i]
		default: // null, or a type InfluxQL does not answer with: no value
			err = d.r.Skip()
		}
		d.vals = append(d.vals, v)
	}
	return err
}

// packedError is the error of a MessagePack error body, or "".
func packedError(body []byte) string {
	n, rest, err := msgp.ReadMapHeaderBytes(body)
	for ; err == nil && n > 0; n-- {
		var k []byte
		if k, rest, err = msgp.ReadMapKeyZC(rest); err == nil && string(k) == "error" {
			s, _, _ := msgp.ReadStringBytes(rest)
			return s
		}
		if err == nil {
			rest, err = msgp.Skip(rest)
		}
	}
	return ""
}
