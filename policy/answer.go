package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// ErrNoCutover answers the running question of a class with no cut-over.
var ErrNoCutover = errors.New("running_s: the class has no cutover_after_s this hour (a policy file of rule: calibrated has one; on stdin give policy.cutover_after_s and policy.free_first)")

// Answer is the ledger's answer to in as one line of JSON, what policygen
// book prints and POST /api/v1/book starts with: Book's decision, or with
// in.RunningS the running answer ({"action", "why", "elapsed_s"}, rounded
// to 0.01 s as the ledger's spent_s is) from the class's cut-over cut
// (in.Cutover, when the input gave one, wins); and the answer's action.
func Answer(in BookInput, p BookPolicy, cut *Cutover) ([]byte, Action, error) {
	if in.RunningS == nil {
		d := Book(in.Attempts, p)
		out, err := json.Marshal(d)
		if err != nil {
			return nil, "", fmt.Errorf("book: %w", err)
		}
		return append(out, '\n'), d.Action, nil
	}
	if in.Cutover != nil {
		cut = in.Cutover
	}
	if cut == nil {
		return nil, "", ErrNoCutover
	}
	d := Running(in.Attempts, *in.RunningS, p, *cut)
	e := Round(d.ElapsedS, 2)
	if !(e >= 0) || math.IsInf(e, 0) {
		return nil, "", fmt.Errorf("book: elapsed %v is not a number of seconds", d.ElapsedS)
	}
	out, _ := json.Marshal(struct { // a finite number and two strings: cannot fail
		Action   Action  `json:"action"`
		Why      string  `json:"why"`
		ElapsedS float64 `json:"elapsed_s"`
	}{d.Action, d.Why, e})
	return append(out, '\n'), d.Action, nil
}
