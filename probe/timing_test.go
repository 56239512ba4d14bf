package probe

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/internal/stalls"
)

// TestQueueTiming runs exact-delay servers and checks that queue_s never
// falls below the true wait (the server's own time from reading the request
// to writing the first token), that the first token is stamped within slack
// after the server wrote it (not at headers, a role chunk, a comment or a
// ping, nor at a later token), that the end is stamped within slack of the
// server's last write, and that tokens and timestamps add up. Comparing with
// the server's own write times keeps the test honest on a loaded machine:
// a stall before the server writes moves both clocks.
func TestQueueTiming(t *testing.T) {
	// slack bounds how late a stamp may be after the server's write on a
	// quiet machine, where gap > 2*slack still tells the first token from
	// the next. Only the stamps' lower bounds can be exact (a stamp before
	// the server's write is a bug whatever the load; gen_s, a difference
	// of two stamps, gets late on both sides); how late a client reads
	// is not bounded on a shared machine (stalls of 200 ms were seen at
	// load 9), so each subtest adds three of the worst stalls seen while
	// its probe ran (stalls.Watch), nothing when the machine is quiet, and
	// never more than gap-50ms, so a first token stamped at the next one
	// still fails however loaded the machine (a stall past that fails the
	// test: the run cannot tell the two apart). The
	// precise error is BenchmarkQueueError's job.
	const (
		delay = 150 * time.Millisecond
		gap   = 400 * time.Millisecond
		slack = 150 * time.Millisecond
	)
	comments := func(n int, every time.Duration, line string) []step {
		var s []step
		for range n {
			s = append(s, step{every, line})
		}
		return s
	}
	tests := []struct {
		name       string
		api        API
		noUsage    bool
		sc         script
		queue, gen time.Duration
		tokens     int
		source     TokensSource
	}{
		{name: "openai usage", api: OpenAI, sc: script{steps: []step{
			{0, oaRole()}, {0, ": comment\n\n"}, {delay, oaText(genText)}, {gap, oaText(genText)},
			{gap, oaText(genText)}, {0, oaFinish()}, {0, oaUsage(7)}, {0, oaDone},
		}}, queue: delay, gen: 2 * gap, tokens: 7, source: TokensUsage},
		{name: "openai deltas", api: OpenAI, noUsage: true, sc: script{steps: []step{
			{0, oaRole()}, {delay, oaText(genText)}, {gap, oaText(genText)}, {gap, oaText(genText)},
			{0, oaFinish()}, {0, oaDone},
		}}, queue: delay, gen: 2 * gap, tokens: 3, source: TokensDeltas},
		{name: "openai comments while queued", api: OpenAI, noUsage: true, sc: script{steps: append(
			append([]step{{0, oaRole()}}, comments(6, delay/6, ": queued\n\n")...),
			step{0, oaText(genText)}, step{gap, oaText(genText)}, step{0, oaDone},
		)}, queue: delay, gen: gap, tokens: 2, source: TokensDeltas},
		{name: "openai empty deltas then reasoning_content", api: OpenAI, noUsage: true, sc: script{steps: []step{
			{0, oaRole()}, {delay / 2, oaText("")}, {delay / 2, oaReasoning("reasoning_content", genText)},
			{gap, oaText(genText)}, {0, oaDone},
		}}, queue: delay, gen: gap, tokens: 2, source: TokensDeltas},
		{name: "openai reasoning field", api: OpenAI, noUsage: true, sc: script{steps: []step{
			{delay, oaReasoning("reasoning", genText)}, {gap, oaText(genText)}, {0, oaDone},
		}}, queue: delay, gen: gap, tokens: 2, source: TokensDeltas},
		{name: "openai headers late", api: OpenAI, noUsage: true, sc: script{headerWait: delay, steps: []step{
			{0, oaText(genText)}, {gap, oaDone},
		}}, queue: delay, gen: gap, tokens: 1, source: TokensDeltas},
		{name: "openai gzip", api: OpenAI, sc: script{gzip: true, header: map[string]string{"Content-Encoding": "gzip"},
			steps: []step{
				{0, oaRole()}, {delay, oaText(genText)}, {gap, oaText(genText)}, {0, oaUsage(4)}, {0, oaDone},
			}}, queue: delay, gen: gap, tokens: 4, source: TokensUsage},
		{name: "anthropic usage", api: Anthropic, sc: script{steps: []step{
			{0, anStart()}, {0, anPing()}, {0, anBlock()}, {delay, anText(genText)}, {gap, anText(genText)},
			{gap, anText(genText)}, {0, anBlockStop()}, {0, anDelta(5)}, {0, anStop()},
		}}, queue: delay, gen: 2 * gap, tokens: 5, source: TokensUsage},
		{name: "anthropic thinking without usage", api: Anthropic, sc: script{steps: []step{
			{0, anStart()}, {delay, anThinking(genText)}, {gap, anText(genText)}, {0, anDelta(-1)}, {0, anStop()},
		}}, queue: delay, gen: gap, tokens: 2, source: TokensDeltas},
		{name: "anthropic pings while queued", api: Anthropic, sc: script{steps: append(
			append([]step{{0, anStart()}, {0, anBlock()}}, comments(5, delay/5, anPing())...),
			step{0, anText(genText)}, step{gap, anDelta(1)}, step{0, anStop()},
		)}, queue: delay, gen: gap, tokens: 1, source: TokensUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := &stepLog{}
			tt.sc.log = log
			tg := target(tt.api, serve(t, tt.sc))
			tg.IncludeUsage = !tt.noUsage
			stopWatch := stalls.Watch()
			s, err := Run(context.Background(), tg)
			late := min(slack+3*stopWatch(), gap-50*time.Millisecond) // how late a stamp may be in this run
			if err != nil || s.Outcome != OK {
				t.Fatalf("Run: outcome %s, err %v", s.Outcome, err)
			}
			at := log.times()
			first, last := at[firstTokenStep(tt.sc.steps)], at[len(at)-1]
			if q, held := s.QueueS(), first.Sub(log.readAt()); q < held.Seconds() || q < tt.queue.Seconds() {
				t.Errorf("queue_s = %s, below the true wait %s (nominal %s)", ms(q), held, tt.queue)
			}
			if read := log.readAt(); s.Sent.After(read) {
				t.Errorf("sent stamped %v after the server had read the request", s.Sent.Sub(read))
			}
			if w, exact := s.Wait(); w != s.QueueS() || !exact {
				t.Errorf("Wait() = %v, %v; want queue_s %v, exact", w, exact, s.QueueS())
			}
			within(t, "first token", s.FirstToken, first, late)
			within(t, "end", s.End, last, late)
			if g, want := s.GenS(), last.Sub(first); g < (want-late).Seconds() || g > (want+late).Seconds() {
				t.Errorf("gen_s = %s, server wrote over %s (nominal %s)", ms(g), want, tt.gen)
			}
			if s.Tokens != tt.tokens || s.TokensSource != tt.source {
				t.Errorf("tokens = %d (%s), want %d (%s)", s.Tokens, s.TokensSource, tt.tokens, tt.source)
			}
			checkOrder(t, s)
		})
	}
}

// within checks that got is in [wrote, wrote+slack].
func within(t *testing.T, what string, got, wrote time.Time, slack time.Duration) {
	t.Helper()
	if d := got.Sub(wrote); d < 0 || d > slack {
		t.Errorf("%s stamped %s after the server wrote it, want in [0, %s]", what, d, slack)
	}
}

// firstTokenStep is the index of the first step that carries generated text.
func firstTokenStep(steps []step) int {
	for i, s := range steps {
		if strings.Contains(s.data, genText) {
			return i
		}
	}
	return -1
}

func checkOrder(t *testing.T, s Sample) {
	t.Helper()
	if s.Status != 200 || !s.HeadersSeen || s.Lane != "lane1" || s.Kind != "free" {
		t.Errorf("status %d, headers seen %v, lane %q kind %q", s.Status, s.HeadersSeen, s.Lane, s.Kind)
	}
	order := []time.Time{s.Start, s.ConnectStart, s.Connected, s.Sent, s.Headers, s.FirstToken, s.End}
	for i, ts := range order {
		if ts.IsZero() {
			t.Fatalf("timestamp %d of start/connect start/connected/sent/headers/first token/end is zero", i)
		}
		if i > 0 && ts.Before(order[i-1]) {
			t.Errorf("timestamp %d (%v) before timestamp %d (%v)", i, ts, i-1, order[i-1])
		}
	}
	if s.ConnectS() <= 0 || s.SentS() < s.ConnectS() || s.HeadersS() > s.QueueS() || s.Reused {
		t.Errorf("connect_s %v, sent_s %v, headers_s %v, queue %v, reused %v",
			s.ConnectS(), s.SentS(), s.HeadersS(), s.QueueS(), s.Reused)
	}
	if got, want := s.QueueS(), s.FirstToken.Sub(s.Sent).Seconds(); got != want {
		t.Errorf("queue_s %v, want sent → first token %v", got, want)
	}
}

// TestConnectS checks the phase arithmetic: each phase counts only when both
// of its timestamps are set, and a reused connection costs nothing.
func TestConnectS(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name string
		s    Sample
		want time.Duration
	}{
		{"dns connect tls", Sample{DNSStart: at(0), DNSDone: at(10), ConnectStart: at(10), Connected: at(30),
			TLSStart: at(30), TLSDone: at(60)}, 60 * time.Millisecond},
		{"ip address, plain http", Sample{ConnectStart: at(5), Connected: at(25)}, 20 * time.Millisecond},
		{"dns never done", Sample{DNSStart: at(0)}, 0},
		{"connect failed", Sample{DNSStart: at(0), DNSDone: at(3), ConnectStart: at(3)}, 3 * time.Millisecond},
		{"tls without start", Sample{ConnectStart: at(0), Connected: at(2), TLSDone: at(9)}, 2 * time.Millisecond},
		{"reused", Sample{Reused: true, ConnectStart: at(0), Connected: at(2)}, 0},
		{"nothing", Sample{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.ConnectS(); math.Abs(got-tt.want.Seconds()) > 1e-9 {
				t.Errorf("ConnectS() = %v, want %v", got, tt.want.Seconds())
			}
		})
	}
}

// TestConnectPhases probes real servers and checks which phases are stamped.
func TestConnectPhases(t *testing.T) {
	srv := serve(t, okOpenAIStream)
	tests := []struct {
		name     string
		url      string
		dns, tls bool
	}{
		{"ip address", srv, false, false},
		{"host name", strings.Replace(srv, "127.0.0.1", "localhost", 1), true, false},
		{"tls handshake refused", tlsURL(t), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := Run(context.Background(), target(OpenAI, tt.url))
			if s.ConnectStart.IsZero() || s.Connected.IsZero() || s.Reused {
				t.Fatalf("connect start %v, connected %v, reused %v", s.ConnectStart, s.Connected, s.Reused)
			}
			if got := !s.DNSStart.IsZero() && !s.DNSDone.IsZero(); got != tt.dns {
				t.Errorf("dns stamped %v, want %v", got, tt.dns)
			}
			if got := !s.TLSStart.IsZero() && !s.TLSDone.IsZero(); got != tt.tls {
				t.Errorf("tls stamped %v, want %v", got, tt.tls)
			}
			phases := s.Connected.Sub(s.ConnectStart) + s.DNSDone.Sub(s.DNSStart) + s.TLSDone.Sub(s.TLSStart)
			if got := s.ConnectS(); math.Abs(got-phases.Seconds()) > 1e-9 || got <= 0 || s.Connected.Before(s.Start) {
				t.Errorf("ConnectS() = %v, want the phases' sum %v", got, phases.Seconds())
			}
		})
	}
}

// TestWait checks the censored wait of each outcome: exact when a token came,
// a lower bound (Sent → End, End at the deadline) when a probe timed out with
// its request on the wire, and zero otherwise.
func TestWait(t *testing.T) {
	const (
		exact = iota
		lower
		zero
	)
	want := map[string]int{
		"ok openai":                      exact,
		"stall before headers":           lower,
		"stall after headers":            lower,
		"endless empty deltas anthropic": lower,
		"caller cancels":                 lower,
		"stall after first token":        exact, // a timeout, but the queue is known
		"anthropic error event":          exact, // failed after its first token
		"openai error event":             zero,  // failed before any token
		"refused connection":             zero,
		"429 seconds":                    zero,
		"503":                            zero,
		"bad base url":                   zero,
	}
	for _, sc := range scenarios() {
		kind, ok := want[sc.name]
		if !ok {
			continue
		}
		delete(want, sc.name)
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := runScenario(t, sc)
			w, isExact := s.Wait()
			switch kind {
			case exact:
				if s.FirstToken.IsZero() || w != s.QueueS() || w <= 0 || !isExact {
					t.Errorf("Wait() = %v, %v; want queue_s %v, exact", w, isExact, s.QueueS())
				}
			case lower:
				if s.Sent.IsZero() || !s.FirstToken.IsZero() || isExact || w != s.End.Sub(s.Sent).Seconds() || w <= 0 {
					t.Errorf("Wait() = %v, %v; want sent → end %v, a lower bound", w, isExact, s.End.Sub(s.Sent))
				}
				if sc.cancelAfter == 0 && s.End.Sub(s.Start) > shortTimeout {
					t.Errorf("end %v after start, past the %v deadline", s.End.Sub(s.Start), shortTimeout)
				}
			case zero:
				if w != 0 || !isExact {
					t.Errorf("Wait() = %v, %v; want 0, exact", w, isExact)
				}
			}
		})
	}
	if len(want) > 0 {
		t.Errorf("no scenario named %v", want)
	}
}
