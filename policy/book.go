package policy

import (
	"errors"
	"math"
	"strconv"

	"github.com/lanewatch/lanewatch/internal/num"
)

// Bounds on the numbers the ledger accepts from outside (docs/ledger.md#bounds).
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

// Attempt is one attempt made so far (docs/ledger.md#inputs).
type Attempt struct {
	QueueS        float64
	GenS          float64
	EmittedTokens int
	Shipped       bool
	Error         bool
}

// BookPolicy is the `book` of a class in a policy file. The zero value's
// lanes are not eligible, the safe side; Book does not read FreeLane and
// PaidLane.
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

// FieldError is a value out of bounds; Field is the key ("next_est_tokens"),
// for a reader to put its own path in front.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate returns a *FieldError for the first number out of bounds, in
// the key order of a policy file.
func (p BookPolicy) Validate() error {
	for _, f := range []struct {
		name     string
		v, limit float64
	}{{"deadline_s", p.DeadlineS, MaxSeconds}, {"next_queue_s", p.NextQueueS, MaxSeconds}, {"next_gen_s", p.NextGenS, MaxSeconds},
		{"ceiling_tokens", float64(p.CeilingTokens), MaxTokens}, {"next_est_tokens", float64(p.NextEstTokens), MaxTokens},
		{"paid_queue_s", p.PaidQueueS, MaxSeconds}, {"paid_usd_per_1k", p.PaidUSDPer1k, MaxUSDPer1k}} {
		if err := CheckNumber(f.name, f.v, f.limit); err != nil {
			return err
		}
	}
	return nil
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

// Decision is the ledger's answer, exact; it is rounded when encoded.
type Decision struct {
	Action          Action
	Why             string
	SpentS          float64 // Σ(queue_s + gen_s)
	RemainingS      float64 // deadline_s − spent_s (negative when overdrawn)
	SpentTokens     int     // Σ emitted_tokens
	ProjectedTokens int     // spent_tokens + next_est_tokens
	SunkUSD         float64 // spent_tokens/1000 × paid_usd_per_1k
}

// Book is the retry ledger (docs/ledger.md#the-checks), given the attempts
// so far and the class's policy for the hour. It does not allocate and is
// safe for any input: token sums saturate at math.MaxInt (over any
// ceiling), a negative token count counts as 0, and a non-finite sum of
// seconds fits no lane.
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

// MarshalJSON encodes the decision as the ledger's test vectors do
// (docs/ledger.md#rounding); it refuses a non-finite figure.
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

// Wait is the running answer that keeps the attempt in flight.
const Wait Action = "wait"

// The running answer's reasons, a contract as the ledger's are.
const (
	WhyRunningWait       = "the paid lane still fits after this wait; keep waiting"
	WhyRunningCut        = "no first token by cutover_after_s: cancel and cut over"
	WhyRunningNotFirst   = "the free lane is not worth a try this hour: cut over"
	WhyRunningPaidClosed = "no paid lane is eligible this hour: keep waiting"
)

// RunningDecision is the running answer: Wait or CutOver, and the seconds
// the job has spent.
type RunningDecision struct {
	Action   Action
	Why      string
	ElapsedS float64
}

// Running answers "an attempt is running with no first token after
// runningS seconds" (docs/ledger.md#while-an-attempt-runs); a NaN elapsed
// time counts as past the cut-over.
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
