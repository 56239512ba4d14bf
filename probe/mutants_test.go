package probe

// These tests pin rules that mutation testing (issue 22) found no test
// deciding, and the bound on reported tokens (issue 18 item 6); each names
// the mutant it kills. Expected values are worked by hand.

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Every request asks for an event stream and names the probe. Kills the
// Accept (and User-Agent) header dropped from newJSONRequest.
func TestRequestAsksForAnEventStream(t *testing.T) {
	for _, c := range []struct {
		api    API
		stream script
	}{{OpenAI, okOpenAIStream}, {Anthropic, okAnthropicStream}} {
		t.Run(string(c.api), func(t *testing.T) {
			rec := &recorder{next: c.stream}
			if _, err := Run(context.Background(), target(c.api, serve(t, rec))); err != nil {
				t.Fatalf("Run: %v", err)
			}
			r := rec.requests()[0]
			if got := r.header.Get("Accept"); got != "text/event-stream" {
				t.Errorf("Accept %q, want text/event-stream", got)
			}
			if got := r.header.Get("User-Agent"); got != "lanewatch-probe" {
				t.Errorf("User-Agent %q, want lanewatch-probe", got)
			}
		})
	}
}

// streamEnd names each way a stream can stop, and keeps its cause for
// errors.Is. Kills the removal of any of its cases (ErrLineTooLong, gzip
// errors and the rest fall to the generic "read: ..." failure) and each
// part of isGzipError.
func TestStreamEndClassifies(t *testing.T) {
	boom := errors.New("connection reset by peer")
	for _, c := range []struct {
		name     string
		err      error
		finished bool
		outcome  Outcome // "" for a clean end
		cause    error
		detail   string
	}{
		{"clean end after a stop reason", io.EOF, true, "", nil, ""},
		{"end without a terminal event", io.EOF, false, StreamError, ErrNoTerminal, "stream ended without a terminal event"},
		{"closed mid-event", io.ErrUnexpectedEOF, true, StreamError, ErrTruncated, "connection closed mid-stream"},
		{"line over the cap", ErrLineTooLong, false, StreamError, ErrLineTooLong, "line or event over 64 bytes"},
		{"line over the cap, wrapped", fmt.Errorf("sse: %w", ErrLineTooLong), false, StreamError, ErrLineTooLong, "line or event over 64 bytes"},
		{"response over the cap", ErrTooLarge, false, StreamError, ErrTooLarge, "response over 4096 bytes"},
		{"gzip header", gzip.ErrHeader, false, StreamError, gzip.ErrHeader, "corrupt gzip stream"},
		{"gzip checksum", gzip.ErrChecksum, false, StreamError, gzip.ErrChecksum, "corrupt gzip stream"},
		{"corrupt deflate", flate.CorruptInputError(7), false, StreamError, flate.CorruptInputError(7), "corrupt gzip stream"},
		{"other read error", boom, false, StreamError, boom, "read: connection reset by peer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &run{t: Target{MaxLine: 64, MaxBytes: 4096}}
			r.tl.finished = c.finished
			err := r.streamEnd(context.Background(), c.err)
			if c.outcome == "" {
				if err != nil {
					t.Fatalf("streamEnd = %v, want nil", err)
				}
				return
			}
			var f *failure
			if !errors.As(err, &f) {
				t.Fatalf("streamEnd = %v (%T), want a *failure", err, err)
			}
			if f.outcome != c.outcome || f.detail != c.detail || !errors.Is(err, c.cause) {
				t.Fatalf("streamEnd = %s %q (cause %v), want %s %q wrapping %v", f.outcome, f.detail, f.err, c.outcome, c.detail, c.cause)
			}
		})
	}
	// A context that ended is a timeout, whatever the read said.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &run{t: Target{MaxLine: 64}}
	var f *failure
	if err := r.streamEnd(ctx, ErrLineTooLong); !errors.As(err, &f) || f.outcome != Timeout || !errors.Is(err, context.Canceled) {
		t.Fatalf("streamEnd after cancel = %v, want a timeout wrapping context.Canceled", err)
	}
}

// gzipped returns body gzipped, and the same with its CRC-32 trailer broken
// or its deflate data cut by garbage.
func gzipped(body string) (ok, badCRC, badDeflate []byte) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(body))
	_ = zw.Close()
	ok = b.Bytes()
	badCRC = bytes.Clone(ok)
	badCRC[len(badCRC)-8] ^= 0xff                                     // first byte of the CRC-32
	badDeflate = append(bytes.Clone(ok[:10]), 0xff, 0xff, 0xff, 0xff) // header, then a reserved block type
	return ok, badCRC, badDeflate
}

// A probe of a lane that sends a broken gzip stream says so, for each way
// the stream can be broken.
func TestCorruptGzipStream(t *testing.T) {
	_, badCRC, badDeflate := gzipped(oaText(genText) + oaFinish() + oaUsage(3)) // no [DONE]: read to the end
	for _, c := range []struct {
		name  string
		body  []byte
		cause error
	}{
		{"not gzip at all", []byte(oaText(genText) + oaDone), gzip.ErrHeader},
		{"checksum", badCRC, gzip.ErrChecksum},
		{"deflate data", badDeflate, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(c.body)
			}))
			s, err := Run(context.Background(), target(OpenAI, url))
			if s.Outcome != StreamError || s.Detail != "corrupt gzip stream" {
				t.Fatalf("outcome %s %q, want stream_error \"corrupt gzip stream\"", s.Outcome, s.Detail)
			}
			var corrupt flate.CorruptInputError
			if c.cause != nil && !errors.Is(err, c.cause) || c.cause == nil && !errors.As(err, &corrupt) {
				t.Fatalf("error %v does not wrap the gzip error", err)
			}
		})
	}
}

// A probe of a lane that sends a line over the cap names the cap.
func TestLineOverTheCapNamesTheCap(t *testing.T) {
	url := serve(t, script{steps: []step{{0, "data: " + strings.Repeat("x", 100) + "\n\n"}}})
	tg := target(OpenAI, url)
	tg.MaxLine = 64
	s, err := Run(context.Background(), tg)
	if s.Outcome != StreamError || s.Detail != "line or event over 64 bytes" || !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("outcome %s %q (%v), want stream_error \"line or event over 64 bytes\"", s.Outcome, s.Detail, err)
	}
}

// An event's data (its data lines joined with "\n") may be exactly the cap,
// not a byte more, however its lines split it. With a cap of 12 a line
// "data:" + 7 bytes is 12 bytes, so each line is within the cap. Kills
// sse.go field's `len(r.data)+len(value)+1 > r.max+1` moved by 1 or 2 bytes.
func TestSSEDataCapIsExact(t *testing.T) {
	const limit = 12
	for _, c := range []struct {
		name  string
		lines string
		data  string // "" with tooLong
		over  bool
	}{
		{"one line at the cap", "data:abcdefg\n", "abcdefg", false},
		{"7 + 1 + 4 = 12", "data:abcdefg\ndata:hijk\n", "abcdefg\nhijk", false},
		{"7 + 1 + 5 = 13", "data:abcdefg\ndata:hijkl\n", "", true},
		{"7 + 1 + 6 = 14", "data:abcdefg\ndata:hijklm\n", "", true},
		{"5 + 1 + 5 + 1 = 12 (an empty last line)", "data:abcde\ndata:fghij\ndata:\n", "abcde\nfghij\n", false},
		{"5 + 1 + 5 + 1 + 0 + 1 = 13", "data:abcde\ndata:fghij\ndata:\ndata:\n", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev, err := NewSSEReader(strings.NewReader(c.lines+"\n"), limit).Next()
			if c.over {
				if !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("Next = %q, %v; want ErrLineTooLong", ev.Data, err)
				}
				return
			}
			if err != nil || string(ev.Data) != c.data {
				t.Fatalf("Next = %q, %v; want %q", ev.Data, err, c.data)
			}
		})
	}
}

// The server's usage is trusted up to the request's max_tokens, and never
// below 0; beyond that the counted deltas stand in (issue 18 item 6).
func TestTokensBoundedByMaxTokens(t *testing.T) {
	for _, c := range []struct {
		name   string
		tl     tally
		tokens int
		source TokensSource
	}{
		{"no usage: deltas", tally{deltas: 2}, 2, TokensDeltas},
		{"usage within the cap", tally{deltas: 2, usage: 5, hasUsage: true}, 5, TokensUsage},
		{"usage at the cap", tally{deltas: 2, usage: 12, hasUsage: true}, 12, TokensUsage},
		{"usage one over the cap", tally{deltas: 2, usage: 13, hasUsage: true}, 2, TokensDeltas},
		{"absurd usage", tally{deltas: 2, usage: 999999999, hasUsage: true}, 2, TokensDeltas},
		{"usage 0", tally{deltas: 2, usage: 0, hasUsage: true}, 0, TokensUsage},
		{"negative usage", tally{deltas: 2, usage: -1, hasUsage: true}, 2, TokensDeltas},
	} {
		t.Run(c.name, func(t *testing.T) {
			if n, src := c.tl.tokens(12); n != c.tokens || src != c.source {
				t.Fatalf("tokens(12) = %d %s, want %d %s", n, src, c.tokens, c.source)
			}
		})
	}
}

// A lane that claims 999999999 tokens for two content deltas, asked for at
// most 12, is measured by its deltas: 2 tokens over the 50 ms the server
// waits between them, about 40 tok/s (the claim gave 999590281). The client
// sees the gap only to within its own scheduling: a first delta read 0.5 ms
// late made it 49.5 ms in one CI run, so the bound is half the gap, 80 tok/s,
// still seven orders of magnitude below the claim.
func TestAbsurdUsageGivesWayToDeltas(t *testing.T) {
	const gap = 50 * time.Millisecond
	for _, c := range []struct {
		api   API
		steps []step
	}{
		{OpenAI, []step{{0, oaRole()}, {0, oaText("a")}, {gap, oaText("b")}, {0, oaFinish()}, {0, oaUsage(999999999)}, {0, oaDone}}},
		{Anthropic, []step{{0, anStart()}, {0, anBlock()}, {0, anText("a")}, {gap, anText("b")}, {0, anDelta(999999999)}, {0, anStop()}}},
	} {
		t.Run(string(c.api), func(t *testing.T) {
			tg := target(c.api, serve(t, script{steps: c.steps}))
			tg.MaxTokens = 12
			s, err := Run(context.Background(), tg)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if s.Tokens != 2 || s.TokensSource != TokensDeltas {
				t.Fatalf("tokens %d from %s, want 2 from deltas", s.Tokens, s.TokensSource)
			}
			if gen := s.GenS(); gen < gap.Seconds()/2 || float64(s.Tokens)/gen > 80 {
				t.Fatalf("gen_s %.4f, tok/s %.1f; want gen_s >= 0.025 and tok/s <= 80", gen, float64(s.Tokens)/gen)
			}
		})
	}
	// A sane count is still the server's.
	tg := target(OpenAI, serve(t, script{steps: []step{{0, oaText("a")}, {0, oaText("b")}, {0, oaUsage(12)}, {0, oaDone}}}))
	tg.MaxTokens = 12
	if s, err := Run(context.Background(), tg); err != nil || s.Tokens != 12 || s.TokensSource != TokensUsage {
		t.Fatalf("usage 12 of max 12: tokens %d from %s (%v), want 12 from usage", s.Tokens, s.TokensSource, err)
	}
}

// safeToken lets through 1 to 48 bytes of letters, digits and _.:/+- and
// nothing else; each range is checked at both ends and one past them.
func TestSafeToken(t *testing.T) {
	for _, c := range []struct {
		in   string
		safe bool
	}{
		{"", false},
		{"a", true},
		{strings.Repeat("x", 48), true},
		{strings.Repeat("x", 49), false},
		{"az", true}, {"AZ", true}, {"09", true}, {"_.:/+-", true},
		{"rate_limit_error", true}, {"text/event-stream", true},
		{"`", false}, {"{", false}, // 'a'-1, 'z'+1
		{"@", false}, {"[", false}, // 'A'-1, 'Z'+1
		{";", false}, {"a;b", false}, // ('0'-1 and '9'+1 are '/' and ':', both in the list)
		{"a b", false}, {"é", false}, {"a\n", false}, {"a*", false},
	} {
		want := ""
		if c.safe {
			want = c.in
		}
		if got := safeToken(c.in); got != want {
			t.Errorf("safeToken(%q) = %q, want %q", c.in, got, want)
		}
	}
}

// safeHeader lets through up to 64 bytes of printable ASCII (0x20-0x7e).
func TestSafeHeader(t *testing.T) {
	for _, c := range []struct {
		in   string
		safe bool
	}{
		{"", true},
		{"7", true},
		{" ~", true}, // 0x20 and 0x7e
		{"\x1f", false},
		{"\x7f", false},
		{"Wed, 21 Oct 2015 07:28:00 GMT", true},
		{strings.Repeat("9", 64), true},
		{strings.Repeat("9", 65), false},
		{"7\xff", false},
	} {
		want := ""
		if c.safe {
			want = c.in
		}
		if got := safeHeader(c.in); got != want {
			t.Errorf("safeHeader(%q) = %q, want %q", c.in, got, want)
		}
	}
}

// An Error's text names the lane and outcome, then the detail when there
// is one.
func TestErrorText(t *testing.T) {
	for _, c := range []struct {
		e    Error
		want string
	}{
		{Error{Lane: "l1", Outcome: Timeout, Detail: "deadline exceeded after 1.0s"}, `probe lane "l1": timeout: deadline exceeded after 1.0s`},
		{Error{Lane: "l1", Outcome: Empty}, `probe lane "l1": empty`},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
}

// chunks is a reader that returns its chunks one per Read.
type chunks [][]byte

func (c *chunks) Read(p []byte) (int, error) {
	if len(*c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*c)[0])
	if n == len((*c)[0]) {
		*c = (*c)[1:]
	} else {
		(*c)[0] = (*c)[0][n:]
	}
	return n, nil
}

// readAllCapped reads r to its end or error, at most 100 reads (a reader
// that makes no progress must not hang the test).
func readAllCapped(r io.Reader, buf int) ([]byte, error) {
	var out []byte
	p := make([]byte, buf)
	for range 100 {
		n, err := r.Read(p)
		out = append(out, p[:n]...)
		if err != nil {
			return out, err
		}
	}
	return out, errors.New("no progress in 100 reads")
}

// capReader passes exactly max bytes; the byte after them is ErrTooLarge,
// and the error sticks. Worked with max 10.
func TestCapReader(t *testing.T) {
	const limit = 10
	digits := []byte("0123456789abcdef")
	for _, c := range []struct {
		name string
		src  [][]byte
		buf  int
		want string
		err  error
	}{
		{"exactly the cap", [][]byte{digits[:10]}, 64, "0123456789", io.EOF},
		{"exactly the cap in small reads", [][]byte{digits[:4], digits[4:8], digits[8:10]}, 64, "0123456789", io.EOF},
		{"one over in one read", [][]byte{digits[:11]}, 64, "0123456789", ErrTooLarge},
		{"six over in one read", [][]byte{digits[:16]}, 64, "0123456789", ErrTooLarge},
		{"over across reads", [][]byte{digits[:6], digits[6:16]}, 64, "0123456789", ErrTooLarge},
		{"small buffer", [][]byte{digits[:16]}, 3, "0123456789", ErrTooLarge},
		{"under the cap", [][]byte{digits[:9]}, 64, "012345678", io.EOF},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := chunks(c.src)
			cr := &capReader{r: &src, max: limit}
			got, err := readAllCapped(cr, c.buf)
			if string(got) != c.want || !errors.Is(err, c.err) {
				t.Fatalf("read %q, %v; want %q, %v", got, err, c.want, c.err)
			}
			if n, again := cr.Read(make([]byte, 8)); n != 0 || !errors.Is(again, c.err) {
				t.Fatalf("read after the end: %d, %v; want 0, %v (sticky)", n, again, c.err)
			}
		})
	}
}

// Every 2xx status is a stream to read, and nothing outside 200-299 is.
func TestTwoHundredsAreStreams(t *testing.T) {
	for _, c := range []struct {
		status int
		want   Outcome
	}{{200, OK}, {201, OK}, {299, OK}, {300, HTTPError}} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			steps := okOpenAIStream.steps
			s, _ := Run(context.Background(), target(OpenAI, serve(t, script{status: c.status, steps: steps})))
			if s.Outcome != c.want || s.Status != c.status {
				t.Fatalf("status %d: outcome %s (%s), want %s", s.Status, s.Outcome, s.Detail, c.want)
			}
		})
	}
}

// A remaining count without its reset header is still a count, and a reset
// without a count still a reset.
func TestQuotaHalfADialect(t *testing.T) {
	for _, c := range []struct {
		name   string
		header map[string]string
		want   quota
	}{
		{"remaining only", map[string]string{"x-ratelimit-remaining-requests": "5"}, quota{remaining: 5, known: true}},
		{"reset only", map[string]string{"x-ratelimit-reset-requests": "6m0s"}, quota{reset: 6 * time.Minute, resetKnown: true}},
		{"anthropic remaining only", map[string]string{"anthropic-ratelimit-requests-remaining": "0"}, quota{remaining: 0, known: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			if got := parseQuota(h, wall); got != c.want {
				t.Fatalf("parseQuota = %+v, want %+v", got, c.want)
			}
		})
	}
}

// The first dialect with a valid count or reset supplies both: a count is
// never paired with another window's reset.
func TestQuotaDialectsNotMixed(t *testing.T) {
	h := http.Header{}
	h.Set("anthropic-ratelimit-requests-remaining", "3")
	h.Set("x-ratelimit-reset-requests", "6m0s")
	if got, want := parseQuota(h, wall), (quota{remaining: 3, known: true}); got != want {
		t.Fatalf("parseQuota = %+v, want %+v (the anthropic count alone)", got, want)
	}
}

// parseCount takes 1 to 18 digits, nothing else.
func TestParseCount(t *testing.T) {
	for _, c := range []struct {
		in    string
		n     int64
		known bool
	}{
		{"", 0, false}, {" 7 ", 7, true}, {"0", 0, true},
		{"123456789012345678", 123456789012345678, true}, // 18 digits
		{"1234567890123456789", 0, false},                // 19
		{"-1", 0, false}, {"+1", 0, false}, {"1e3", 0, false}, {"0x1f", 0, false},
	} {
		if n, ok := parseCount(c.in); n != c.n || ok != c.known {
			t.Errorf("parseCount(%q) = %d, %v; want %d, %v", c.in, n, ok, c.n, c.known)
		}
	}
}

// decimal takes 1 to 20 digits with an optional fraction of 1 to 9 digits:
// no sign, exponent, hex, inf or nan, which strconv.ParseFloat would take.
func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		in string
		f  float64
		ok bool
	}{
		{"12", 12, true}, {"1.5", 1.5, true}, {"0.000000001", 1e-9, true},
		{"12345678901234567890", 12345678901234567890, true}, // 20 digits
		{"123456789012345678901", 0, false},                  // 21
		{"1.123456789", 1.123456789, true},                   // 9 fraction digits
		{"1.1234567890", 0, false},                           // 10
		{"", 0, false}, {".5", 0, false}, {"5.", 0, false},
		{"1e5", 0, false}, {"1.5e3", 0, false}, {"0x10", 0, false}, {"inf", 0, false}, {"NaN", 0, false},
		{"-1", 0, false}, {"+1", 0, false}, {"1.-5", 0, false},
	} {
		if f, ok := decimal(c.in); f != c.f || ok != c.ok {
			t.Errorf("decimal(%q) = %v, %v; want %v, %v", c.in, f, ok, c.f, c.ok)
		}
	}
}

// ahead accepts [0, maxAhead] nanoseconds.
func TestAhead(t *testing.T) {
	for _, c := range []struct {
		ns float64
		ok bool
	}{{0, true}, {1, true}, {float64(maxAhead), true}, {float64(maxAhead) + 1e6, false}, {-1, false}, {math.NaN(), false}} {
		if d, ok := ahead(c.ns); ok != c.ok || ok && d != time.Duration(c.ns) {
			t.Errorf("ahead(%v) = %v, %v; want ok %v", c.ns, d, ok, c.ok)
		}
	}
}

// A Unix reset up to dateSlack (1 s) in the past means now; further back
// it is stale. wall is on a whole second.
func TestParseUnixSlack(t *testing.T) {
	unix := func(d time.Duration) string { return strconv.FormatInt(wall.Add(d).Unix(), 10) }
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{unix(0), 0, true},
		{unix(-time.Second), 0, true},
		{unix(-2 * time.Second), 0, false},
		{unix(90 * time.Second), 90 * time.Second, true},
		{strconv.FormatInt(wall.Add(-time.Second).UnixMilli(), 10), 0, true},
		{strconv.FormatInt(wall.Add(-1001*time.Millisecond).UnixMilli(), 10), 0, false},
	} {
		if d, ok := parseUnix(c.in, wall); d != c.want || ok != c.ok {
			t.Errorf("parseUnix(%s) = %v, %v; want %v, %v", c.in, d, ok, c.want, c.ok)
		}
	}
}

// A detail of exactly maxDetail (160) bytes is kept whole; one byte more is
// cut to 160 and marked.
func TestScrubAtTheCap(t *testing.T) {
	at := strings.Repeat("d", maxDetail)
	for _, c := range []struct{ in, want string }{
		{at, at},
		{at + "e", at + "..."},
	} {
		if got := scrub(c.in, ""); got != c.want {
			t.Errorf("scrub(%d bytes) = %d bytes %q..., want %d bytes", len(c.in), len(got), got[len(got)-4:], len(c.want))
		}
	}
}

// counting is a reader that counts the bytes it hands out.
type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// capReader never pulls more than max+1 bytes from its source, however the
// source splits them: 6, then 10 ready, cap 10, so 6 + 5 = 11.
func TestCapReaderPullsAtMostOnePastTheCap(t *testing.T) {
	src := chunks{[]byte("012345"), []byte("6789abcdef")}
	cnt := &counting{r: &src}
	got, err := readAllCapped(&capReader{r: cnt, max: 10}, 64)
	if string(got) != "0123456789" || !errors.Is(err, ErrTooLarge) || cnt.n != 11 {
		t.Fatalf("read %q, %v, pulling %d bytes; want 0123456789, ErrTooLarge, 11", got, err, cnt.n)
	}
}

// Zero and negative Target fields take the defaults; set ones are kept.
func TestTargetDefaults(t *testing.T) {
	def := Target{Timeout: DefaultTimeout, MaxBytes: DefaultMaxBytes, MaxLine: DefaultMaxLine, MaxTokens: DefaultMaxTokens, Prompt: DefaultPrompt}
	for _, c := range []struct {
		name string
		in   Target
		want Target
	}{
		{"zero", Target{}, def},
		{"negative", Target{Timeout: -1, MaxBytes: -1, MaxLine: -1, MaxTokens: -1}, def},
		{"set", Target{Timeout: time.Second, MaxBytes: 1, MaxLine: 2, MaxTokens: 3, Prompt: "p"},
			Target{Timeout: time.Second, MaxBytes: 1, MaxLine: 2, MaxTokens: 3, Prompt: "p"}},
	} {
		if got := c.in.withDefaults(); got != c.want {
			t.Errorf("%s: withDefaults = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// A timed-out probe ends at its deadline when the deadline fell after its
// start, and at the moment it gave up when the caller's deadline had
// already passed before the probe started (never before its start).
func TestTimeoutEndsAtTheDeadline(t *testing.T) {
	start := time.Now()
	dl := start.Add(20 * time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	<-ctx.Done()
	time.Sleep(10 * time.Millisecond) // give up well after the deadline
	r := &run{s: Sample{Start: start}}
	if f := r.timeout(ctx); f.outcome != Timeout || !r.s.End.Equal(dl) {
		t.Fatalf("timeout: %s, end %v after start; want timeout, end at the deadline (%v)", f.outcome, r.s.End.Sub(start), dl.Sub(start))
	}

	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	r = &run{s: Sample{Start: time.Now()}}
	before := time.Now()
	r.timeout(past)
	if r.s.End.Before(before) {
		t.Fatalf("timeout with a deadline before the start: end %v before the start", r.s.Start.Sub(r.s.End))
	}
}

// An API key may hold printable ASCII, spaces and tabs, but no other
// control character.
func TestValidHeaderValue(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"sk-abc", true}, {"a b", true}, {"a\tb", true}, {"~", true}, {"", true},
		{"a\nb", false}, {"a\rb", false}, {"\x00", false}, {"\x1f", false}, {"\x7f", false},
	} {
		if got := validHeaderValue(c.in); got != c.ok {
			t.Errorf("validHeaderValue(%q) = %v, want %v", c.in, got, c.ok)
		}
	}
}
