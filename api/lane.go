// Package api answers what retry code and CI jobs ask of the policy files,
// in Go (Folder, Choose) and as a read-only JSON API over HTTP (Handler,
// docs/api.md). It never probes or reads a key.
package api

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lanewatch/lanewatch/policy"
)

// Lane is a configured lane with its endpoint and the name of the variable
// that holds its key, never a key.
type Lane struct {
	Lane      string `json:"lane"`
	Kind      string `json:"kind"` // policy.KindFree or policy.KindPaid
	API       string `json:"api"`  // "openai" or "anthropic"
	BaseURL   string `json:"base_url"`
	Model     string `json:"model"`
	APIKeyEnv string `json:"api_key_env"`
}

// Choice is the lane a job of a class runs on in an hour (Choose), with the
// class's cutover_after_s and the book's eligible paid lane as fallback.
type Choice struct {
	Lane
	Hour          string   `json:"hour"`
	Class         string   `json:"class"`
	CutoverAfterS *float64 `json:"cutover_after_s"`
	Fallback      *Lane    `json:"fallback"`
}

// NoLaneError says that no lane fits the class in the hour, and why.
type NoLaneError struct {
	Class, Hour, Why string
}

func (e *NoLaneError) Error() string {
	return fmt.Sprintf("no lane fits class %q in %s: %s", e.Class, e.Hour, e.Why)
}

// UnknownLaneError says that the file names a lane the config lacks.
type UnknownLaneError struct {
	Lane, Class string
}

func (e *UnknownLaneError) Error() string {
	return fmt.Sprintf("lane %q of class %q is not in the config", e.Lane, e.Class)
}

// Choose returns the lane a job of class runs on in f (policy.Class.Start)
// with its endpoint from lanes, and a cut-over time when it starts free and
// has a fallback. The errors: policy.File.NamedClass's, *NoLaneError,
// *UnknownLaneError.
func Choose(f policy.File, class string, lanes []Lane) (Choice, error) {
	c, err := f.NamedClass(class)
	if err != nil {
		return Choice{}, err
	}
	name, cut := c.Start()
	if name == "" {
		return Choice{}, &NoLaneError{Class: c.Name, Hour: f.Hour, Why: WhyNoLane(f, c)}
	}
	l, ok := find(lanes, name)
	if !ok {
		return Choice{}, &UnknownLaneError{Lane: name, Class: c.Name}
	}
	ch := Choice{Lane: l, Hour: f.Hour, Class: c.Name}
	if fb, ok := find(lanes, c.Book.PaidLane); ok && c.Book.PaidEligible {
		ch.Fallback = &fb
	}
	if cut && ch.Fallback != nil {
		after := c.Cutover.AfterS
		ch.CutoverAfterS = &after
	}
	return ch, nil
}

func find(lanes []Lane, name string) (Lane, bool) {
	i := slices.IndexFunc(lanes, func(l Lane) bool { return l.Lane == name })
	if i < 0 {
		return Lane{}, false
	}
	return lanes[i], true
}

// WhyNoLane says, per lane of the file, why it is not in the class's lanes.
func WhyNoLane(f policy.File, c policy.Class) string {
	if len(f.Lanes) == 0 {
		return "the policy file lists no lanes"
	}
	parts := make([]string, len(f.Lanes))
	for i, l := range f.Lanes {
		why := "not listed for the class"
		switch {
		case !l.Eligible:
			why = l.Reason
		case l.Samples <= 0:
			why = "no samples"
		default:
			gen, ok := policy.NextGenS(l.TokPerS, c.EstTokens)
			switch {
			case !ok:
				why = "no decode rate measured"
			case l.NextQueueS+gen > c.DeadlineS:
				why = fmt.Sprintf("does not fit the %s s deadline (%s s queue + %s s to generate %d tokens)",
					secs2(c.DeadlineS), secs2(l.NextQueueS), secs2(gen), c.EstTokens)
			}
		}
		parts[i] = l.Name + ": " + why
	}
	return strings.Join(parts, "; ")
}

// secs2 writes seconds with at most 2 decimals and no trailing zeros.
func secs2(x float64) string { return strconv.FormatFloat(policy.Round(x, 2), 'f', -1, 64) }
