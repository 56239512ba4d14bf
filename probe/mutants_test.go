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
	"net/http"
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
// most 12, is measured by its deltas: 2 tokens over at least the 50 ms gap
// between them, so at most 2 / 0.05 = 40 tok/s (the claim gave 999590281).
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
			if gen := s.GenS(); gen < gap.Seconds() || float64(s.Tokens)/gen > 40 {
				t.Fatalf("gen_s %.3f, tok/s %.1f; want gen_s >= 0.05 and tok/s <= 40", gen, float64(s.Tokens)/gen)
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
