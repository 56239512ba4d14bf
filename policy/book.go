package policy

import (
	"errors"
	"math"
	"strconv"
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
)

// Attempt is one attempt made so far: the time it queued and generated, the
// tokens it emitted (paid for or not) and whether its answer was shipped.
type Attempt struct {
	QueueS        float64
	GenS          float64
	EmittedTokens int
	Shipped       bool
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
//  3. the free lane is eligible and next_queue_s + next_gen_s <= remaining_s → retry_free
//  4. the paid lane is eligible and paid_queue_s + next_gen_s <= remaining_s → cut_over
//  5. otherwise → stop
//
// When a lane is not eligible this hour, Why says so. Book does not allocate.
func Book(attempts []Attempt, pol BookPolicy) Decision {
	var spentS float64
	var spentTokens int
	shipped := false
	for i := range attempts {
		a := &attempts[i]
		spentS += a.QueueS + a.GenS
		spentTokens += a.EmittedTokens
		shipped = shipped || a.Shipped
	}
	remaining := pol.DeadlineS - spentS
	d := Decision{
		SpentS:          spentS,
		RemainingS:      remaining,
		SpentTokens:     spentTokens,
		ProjectedTokens: spentTokens + pol.NextEstTokens,
		SunkUSD:         float64(spentTokens) / 1000 * pol.PaidUSDPer1k,
	}
	switch {
	case shipped:
		d.Action, d.Why = Stop, WhyShipped
	case d.ProjectedTokens > pol.CeilingTokens:
		d.Action, d.Why = Stop, WhyCeiling
	case pol.FreeEligible && pol.NextQueueS+pol.NextGenS <= remaining:
		d.Action, d.Why = RetryFree, WhyFreeFits
	case pol.PaidEligible && pol.PaidQueueS+pol.NextGenS <= remaining:
		d.Action, d.Why = CutOver, WhyPaidFits
		if !pol.FreeEligible {
			d.Why = WhyFreeIneligiblePaidFits
		}
	default:
		d.Action = Stop
		switch {
		case pol.FreeEligible && pol.PaidEligible:
			d.Why = WhyNoneFits
		case pol.PaidEligible:
			d.Why = WhyFreeIneligibleNoneFits
		case pol.FreeEligible:
			d.Why = WhyPaidIneligible
		default:
			d.Why = WhyNoneEligible
		}
	}
	return d
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
	if !finite(d.SpentS) || !finite(d.RemainingS) || !finite(d.SunkUSD) {
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
	if !finite(x) {
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
	if !finite(x) {
		return x
	}
	var buf [32]byte
	v, _ := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], x, 'f', n, 64)), 64)
	if v == 0 {
		return 0 // not -0
	}
	return v
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
