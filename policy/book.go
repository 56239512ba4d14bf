package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/lanewatch/lanewatch/internal/num"
)

// Bounds on the numbers the ledger accepts from outside (stdin, a policy
// file): far past any real job, and low enough that no sum over the
// attempts allowed (10 000) overflows or turns infinite. Readers check them
// (BookPolicy.Validate) before calling Book; Book itself stays safe beyond
// them (see Book).
const (
	MaxSeconds  = 1e9               // any seconds figure: a queue, a generation, a deadline
	MaxTokens   = 1_000_000_000_000 // any token count
	MaxUSDPer1k = 1e6               // the paid price per 1000 tokens
)

// Action is what the retry ledger tells the caller to do next.
type Action string

// The ledger's actions.
const (
	Stop      Action = "stop"       // give up: no further attempt
	RetryFree Action = "retry_free" // one more attempt on the free lane
	CutOver   Action = "cut_over"   // one attempt on the paid lane
)

// The ledger's reasons. They are constants so that Book never allocates.
const (
	WhyShipped  = "a previous attempt already shipped"
	WhyCeiling  = "another try would cross your token ceiling"
	WhyFreeFits = "remaining clock covers one more free attempt"
	WhyPaidFits = "free retry does not fit; one paid attempt does"
	WhyNoneFits = "no lane finishes inside the time you have left"

	WhyFreeIneligiblePaidFits = "the free lane is not eligible this hour; one paid attempt fits"
	WhyFreeIneligibleNoneFits = "the free lane is not eligible this hour and no paid attempt fits"
	WhyPaidIneligible         = "free retry does not fit and no paid lane is eligible this hour"
	WhyNoneEligible           = "neither a free lane nor a paid lane is eligible this hour"

	WhyErrorPaidFits       = "an attempt ended in an error: no free retry; one paid attempt fits"
	WhyErrorNoneFits       = "an attempt ended in an error: no free retry, and no paid attempt fits"
	WhyErrorPaidIneligible = "an attempt ended in an error: no free retry, and no paid lane is eligible this hour"
)

// Attempt is one attempt made so far: the time it queued and generated, the
// tokens it emitted (paid for or not), whether its answer was shipped, and
// whether it ended in an error (an HTTP error, a 429, a refused connection,
// a broken stream) rather than finishing or being abandoned.
type Attempt struct {
	QueueS        float64
	GenS          float64
	EmittedTokens int
	Shipped       bool
	Error         bool
}

// BookPolicy is the ledger policy of a job class for one hour: the `book` of a
// class in a policy file.
//
// FreeEligible and PaidEligible are false in the zero value, which is the safe
// side: a BookPolicy built by hand must say that a lane may be used. A free lane
// that is not eligible is never a retry_free; a paid lane that is not eligible
// is never a cut_over. FreeLane and PaidLane name the lanes whose figures the
// policy holds; Book does not read them.
type BookPolicy struct {
	DeadlineS     float64
	CeilingTokens int
	NextQueueS    float64
	NextGenS      float64
	NextEstTokens int
	PaidQueueS    float64
	PaidUSDPer1k  float64
	FreeEligible  bool
	PaidEligible  bool
	FreeLane      string
	PaidLane      string
}

// FieldError is a value out of bounds: Field is the key as a policy file and
// the ledger's input spell it ("next_est_tokens"), so that a reader can put
// its own path in front: fmt.Errorf("classes[%d].book.%w", i, err).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks every number of the policy against the bounds (finite,
// >= 0, at most MaxSeconds, MaxTokens or MaxUSDPer1k) and returns a
// *FieldError for the first one out of them, in the key order of a policy
// file.
func (p BookPolicy) Validate() error {
	secs := []struct {
		name string
		v    float64
	}{{"deadline_s", p.DeadlineS}, {"next_queue_s", p.NextQueueS}, {"next_gen_s", p.NextGenS}}
	for _, f := range secs {
		if err := CheckNumber(f.name, f.v, MaxSeconds); err != nil {
			return err
		}
	}
	if err := CheckCount("ceiling_tokens", int64(p.CeilingTokens)); err != nil {
		return err
	}
	if err := CheckCount("next_est_tokens", int64(p.NextEstTokens)); err != nil {
		return err
	}
	if err := CheckNumber("paid_queue_s", p.PaidQueueS, MaxSeconds); err != nil {
		return err
	}
	return CheckNumber("paid_usd_per_1k", p.PaidUSDPer1k, MaxUSDPer1k)
}

// CheckNumber returns a *FieldError unless x is finite and in [0, limit].
func CheckNumber(field string, x, limit float64) error {
	switch {
	case !num.Finite(x):
		return &FieldError{field, "must be a finite number"}
	case x < 0:
		return &FieldError{field, "must be >= 0"}
	case x > limit:
		return &FieldError{field, "must be at most " + strconv.FormatFloat(limit, 'f', -1, 64)}
	}
	return nil
}

// CheckCount returns a *FieldError unless n is in [0, MaxTokens].
func CheckCount(field string, n int64) error {
	switch {
	case n < 0:
		return &FieldError{field, "must be >= 0"}
	case n > MaxTokens:
		return &FieldError{field, fmt.Sprintf("must be at most %d", int64(MaxTokens))}
	}
	return nil
}

// Decision is the ledger's answer. It holds exact values; rounding (seconds to
// 2 decimals, dollars to 4, round-half-even on the exact binary value) happens
// only when it is encoded (MarshalJSON, AppendJSON).
type Decision struct {
	Action          Action
	Why             string
	SpentS          float64 // Σ(queue_s + gen_s)
	RemainingS      float64 // deadline_s − spent_s (negative when overdrawn)
	SpentTokens     int     // Σ emitted_tokens
	ProjectedTokens int     // spent_tokens + next_est_tokens
	SunkUSD         float64 // spent_tokens/1000 × paid_usd_per_1k
}

// Book is the retry ledger (docs/ledger.md). Given the attempts so far (none on the
// first call) and the class's policy for the hour, the first check that holds
// decides:
//
//  1. an attempt already shipped → stop
//  2. spent_tokens + next_est_tokens > ceiling_tokens → stop
//  3. the free lane is eligible, no attempt ended in an error, and
//     next_queue_s + next_gen_s <= remaining_s → retry_free
//  4. the paid lane is eligible and paid_queue_s + next_gen_s <= remaining_s → cut_over
//  5. otherwise → stop
//
// When a lane is not eligible this hour, or an attempt ended in an error,
// Why says so. Book does not allocate.
//
// Book is safe for any input, in bounds or not. Token sums saturate: a sum
// that would pass math.MaxInt is math.MaxInt in the Decision and counts as
// over any ceiling, so a huge next_est_tokens is a stop, never a wrapped
// negative projection. A negative token count (emitted or estimated) counts
// as 0. Seconds are summed as floats: a sum that turns infinite, or a NaN
// anywhere, leaves no lane that fits, so the answer is a stop (and
// MarshalJSON refuses the non-finite figures). Readers bound their input
// with BookPolicy.Validate and the Max constants first.
func Book(attempts []Attempt, pol BookPolicy) Decision {
	var spentS float64
	var spentTokens int
	saturated := false
	shipped, erred := false, false
	for i := range attempts {
		a := &attempts[i]
		spentS += a.QueueS + a.GenS
		spentTokens, saturated = addTokens(spentTokens, a.EmittedTokens, saturated)
		shipped = shipped || a.Shipped
		erred = erred || a.Error
	}
	projected, over := addTokens(spentTokens, pol.NextEstTokens, saturated)
	remaining := pol.DeadlineS - spentS
	d := Decision{
		SpentS:          spentS,
		RemainingS:      remaining,
		SpentTokens:     spentTokens,
		ProjectedTokens: projected,
		SunkUSD:         float64(spentTokens) / 1000 * pol.PaidUSDPer1k,
	}
	switch {
	case shipped:
		d.Action, d.Why = Stop, WhyShipped
	case over || projected > pol.CeilingTokens:
		d.Action, d.Why = Stop, WhyCeiling
	case pol.FreeEligible && !erred && pol.NextQueueS+pol.NextGenS <= remaining:
		d.Action, d.Why = RetryFree, WhyFreeFits
	case pol.PaidEligible && pol.PaidQueueS+pol.NextGenS <= remaining:
		d.Action, d.Why = CutOver, WhyPaidFits
		switch {
		case !pol.FreeEligible:
			d.Why = WhyFreeIneligiblePaidFits
		case erred:
			d.Why = WhyErrorPaidFits
		}
	default:
		d.Action = Stop
		switch {
		case !pol.FreeEligible && pol.PaidEligible:
			d.Why = WhyFreeIneligibleNoneFits
		case !pol.FreeEligible:
			d.Why = WhyNoneEligible
		case erred && pol.PaidEligible:
			d.Why = WhyErrorNoneFits
		case erred:
			d.Why = WhyErrorPaidIneligible
		case pol.PaidEligible:
			d.Why = WhyNoneFits
		default:
			d.Why = WhyPaidIneligible
		}
	}
	return d
}

// addTokens returns sum + n (n < 0 counts as 0), saturated at math.MaxInt,
// and whether the true sum passed math.MaxInt (or had already: sat).
func addTokens(sum, n int, sat bool) (int, bool) {
	if sat {
		return math.MaxInt, true
	}
	n = max(n, 0)
	if sum > math.MaxInt-n {
		return math.MaxInt, true
	}
	return sum + n, false
}

// errNotFinite is returned when a Decision holds a value JSON cannot carry.
var errNotFinite = errors.New("policy: decision holds a non-finite number")

// MarshalJSON encodes the decision with the keys of the ledger's test vectors,
// in this order: action, why, spent_s, remaining_s, spent_tokens,
// projected_tokens, sunk_usd_if_those_tokens_were_paid. Seconds are rounded to
// 2 decimals and dollars to 4 (round-half-even on the exact binary value, as
// strconv.FormatFloat does), then written without trailing zeros: 44, 4.05,
// 0.0004. The vectors are matched value for value.
func (d Decision) MarshalJSON() ([]byte, error) {
	if !num.Finite(d.SpentS) || !num.Finite(d.RemainingS) || !num.Finite(d.SunkUSD) {
		return nil, errNotFinite
	}
	return d.AppendJSON(make([]byte, 0, 256)), nil
}

// AppendJSON appends the JSON encoding of d (see MarshalJSON) to dst.
// Non-finite numbers are written as 0; MarshalJSON rejects them instead.
func (d Decision) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"action":`...)
	dst = strconv.AppendQuote(dst, string(d.Action))
	dst = append(dst, `,"why":`...)
	dst = strconv.AppendQuote(dst, d.Why)
	dst = append(dst, `,"spent_s":`...)
	dst = appendRounded(dst, d.SpentS, 2)
	dst = append(dst, `,"remaining_s":`...)
	dst = appendRounded(dst, d.RemainingS, 2)
	dst = append(dst, `,"spent_tokens":`...)
	dst = strconv.AppendInt(dst, int64(d.SpentTokens), 10)
	dst = append(dst, `,"projected_tokens":`...)
	dst = strconv.AppendInt(dst, int64(d.ProjectedTokens), 10)
	dst = append(dst, `,"sunk_usd_if_those_tokens_were_paid":`...)
	dst = appendRounded(dst, d.SunkUSD, 4)
	return append(dst, '}')
}

// appendRounded appends x rounded to n decimals (round-half-even on the exact
// binary value) without trailing zeros; "-0" is written as "0".
func appendRounded(dst []byte, x float64, n int) []byte {
	if !num.Finite(x) {
		return append(dst, '0')
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, x, 'f', n, 64)
	if n > 0 {
		for dst[len(dst)-1] == '0' {
			dst = dst[:len(dst)-1]
		}
		if dst[len(dst)-1] == '.' {
			dst = dst[:len(dst)-1]
		}
	}
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

// Round returns x rounded to n decimals the way the ledger's output is:
// round-half-even on the exact binary value.
func Round(x float64, n int) float64 {
	if !num.Finite(x) {
		return x
	}
	var buf [32]byte
	v, _ := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], x, 'f', n, 64)), 64)
	if v == 0 {
		return 0 // not -0
	}
	return v
}

// Wait is the running answer that keeps the attempt in flight: its first
// token may still come in time (see Running).
const Wait Action = "wait"

// The running answer's reasons, a contract as the ledger's are.
const (
	WhyRunningWait       = "the paid lane still fits after this wait; keep waiting"
	WhyRunningCut        = "no first token by cutover_after_s: cancel and cut over"
	WhyRunningNotFirst   = "the free lane is not worth a try this hour: cut over"
	WhyRunningPaidClosed = "no paid lane is eligible this hour: keep waiting"
)

// RunningDecision is the running answer: Action is Wait or CutOver;
// ElapsedS the seconds the job has spent (the attempts' queue and
// generation plus runningS).
type RunningDecision struct {
	Action   Action
	Why      string
	ElapsedS float64
}

// Running answers "an attempt is running and has no first token after
// runningS seconds": wait, or cancel it and cut over to the paid lane. It
// reads the attempts before the running one, the class's book (whether the
// paid lane is eligible) and the hour's decision (Decide):
//
//  1. the paid lane is not eligible: wait;
//  2. free_first is false: cut_over;
//  3. spent_s + runningS > cutover_after_s: cut_over (a first token at
//     exactly cutover_after_s is in time: the attempt waits at most that);
//  4. otherwise wait.
//
// A NaN elapsed time counts as past the cut-over. Book is unchanged by it:
// Running is asked while an attempt runs, Book after one ended.
func Running(attempts []Attempt, runningS float64, p BookPolicy, c Cutover) RunningDecision {
	elapsed := runningS
	for _, a := range attempts {
		elapsed += a.QueueS + a.GenS
	}
	d := RunningDecision{Action: CutOver, ElapsedS: elapsed}
	switch {
	case !p.PaidEligible:
		d.Action, d.Why = Wait, WhyRunningPaidClosed
	case !c.FreeFirst:
		d.Why = WhyRunningNotFirst
	case !(elapsed <= c.AfterS):
		d.Why = WhyRunningCut
	default:
		d.Action, d.Why = Wait, WhyRunningWait
	}
	return d
}
