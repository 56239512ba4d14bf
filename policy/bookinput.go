package policy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/lanewatch/lanewatch/internal/decode"
	"github.com/lanewatch/lanewatch/internal/num"
)

// Bounds on one ledger input (stdin of policygen book, POST /api/v1/book),
// so that reading one costs at most about 5 MiB.
const (
	MaxAttempts  = 1000
	MaxBookInput = 256 << 10 // bytes
	// maxBookValues bounds the JSON values, keys counted: eleven per
	// attempt, the policy's and the rest.
	maxBookValues = 12*MaxAttempts + 100
)

// BookInput is the ledger's input. RunningS, when set, asks the running
// question (Running); Cutover is the input policy's cut-over, if any.
type BookInput struct {
	Attempts []Attempt
	Policy   BookPolicy
	RunningS *float64
	Cutover  *Cutover
}

// bookDoc is the JSON of a BookInput, once bookinput.schema.json has
// checked it; pointers are optional keys.
type bookDoc struct {
	Attempts []attemptDoc   `yaml:"attempts"`
	Policy   *bookPolicyDoc `yaml:"policy"`
	RunningS *float64       `yaml:"running_s"`
}

type attemptDoc struct {
	QueueS        float64 `yaml:"queue_s"`
	GenS          float64 `yaml:"gen_s"`
	EmittedTokens float64 `yaml:"emitted_tokens"`
	Shipped       bool    `yaml:"shipped"`
	Error         *bool   `yaml:"error"`
}

type bookPolicyDoc struct {
	DeadlineS     float64  `yaml:"deadline_s"`
	CeilingTokens float64  `yaml:"ceiling_tokens"`
	NextQueueS    float64  `yaml:"next_queue_s"`
	NextGenS      float64  `yaml:"next_gen_s"`
	NextEstTokens float64  `yaml:"next_est_tokens"`
	PaidQueueS    float64  `yaml:"paid_queue_s"`
	PaidUSDPer1k  float64  `yaml:"paid_usd_per_1k"`
	FreeEligible  *bool    `yaml:"free_eligible"`
	PaidEligible  *bool    `yaml:"paid_eligible"`
	FreeLane      string   `yaml:"free_lane"` // absent or null: ""
	PaidLane      string   `yaml:"paid_lane"`
	CutoverAfterS *float64 `yaml:"cutover_after_s"`
	FreeFirst     *bool    `yaml:"free_first"`
}

// bookSchemaJSON is the JSON Schema of the ledger's input's keys and types.
//
//go:embed bookinput.schema.json
var bookSchemaJSON []byte

var bookSchema = sync.OnceValues(func() (*jsonschema.Schema, error) { return decode.CompileSchema(bookSchemaJSON) })

// DecodeBookInput decodes the ledger's JSON input strictly
// (docs/ledger.md#inputs, bookinput.schema.json, the Max bounds); with
// withPolicy false it is {"attempts": [...]} alone. Errors name the line
// and field: "line 3: attempts[1].queue_s: must be >= 0".
func DecodeBookInput(data []byte, withPolicy bool) (BookInput, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return BookInput{}, errors.New(`input: empty; want {"attempts": [...], "policy": {...}}`)
	}
	root, err := decode.JSON(data, maxBookValues)
	if err != nil {
		var de *decode.Error
		if errors.As(err, &de) && de.Field == "" {
			de.Field = "input"
		}
		return BookInput{}, err
	}
	sch, err := bookSchema()
	if err != nil {
		return BookInput{}, fmt.Errorf("schema: %w", err)
	}
	if err := decode.Schema(sch, root, decode.SchemaOptions{JSON: true, Root: "input"}); err != nil {
		return BookInput{}, err
	}
	var doc bookDoc
	if err := root.Decode(&doc); err != nil { // the schema has checked every key and type
		return BookInput{}, err
	}
	c := checker{root: root}
	switch {
	case withPolicy && doc.Policy == nil:
		return BookInput{}, decode.Errorf(root.Line, "policy", "missing")
	case !withPolicy && doc.Policy != nil:
		return BookInput{}, decode.Errorf(decode.Line(root, "policy"), "policy", "not allowed: the book comes from the hour's policy file (-policy, -config or the API)")
	case len(doc.Attempts) > MaxAttempts:
		at := decode.Index("attempts", MaxAttempts)
		return BookInput{}, decode.Errorf(decode.Line(root, at), at, "more than %d attempts", MaxAttempts)
	}
	in := BookInput{Attempts: make([]Attempt, len(doc.Attempts))}
	for i, a := range doc.Attempts {
		at := decode.Index("attempts", i)
		in.Attempts[i] = Attempt{
			QueueS:        c.number(decode.Key(at, "queue_s"), a.QueueS, MaxSeconds),
			GenS:          c.number(decode.Key(at, "gen_s"), a.GenS, MaxSeconds),
			EmittedTokens: c.count(decode.Key(at, "emitted_tokens"), a.EmittedTokens),
			Shipped:       a.Shipped,
			Error:         a.Error != nil && *a.Error,
		}
	}
	if withPolicy {
		p := *doc.Policy
		in.Policy = BookPolicy{
			DeadlineS:     c.number("policy.deadline_s", p.DeadlineS, MaxSeconds),
			CeilingTokens: c.count("policy.ceiling_tokens", p.CeilingTokens),
			NextQueueS:    c.number("policy.next_queue_s", p.NextQueueS, MaxSeconds),
			NextGenS:      c.number("policy.next_gen_s", p.NextGenS, MaxSeconds),
			NextEstTokens: c.count("policy.next_est_tokens", p.NextEstTokens),
			PaidQueueS:    c.number("policy.paid_queue_s", p.PaidQueueS, MaxSeconds),
			PaidUSDPer1k:  c.number("policy.paid_usd_per_1k", p.PaidUSDPer1k, MaxUSDPer1k),
			FreeEligible:  p.FreeEligible == nil || *p.FreeEligible,
			PaidEligible:  p.PaidEligible == nil || *p.PaidEligible,
			FreeLane:      p.FreeLane,
			PaidLane:      p.PaidLane,
		}
		switch {
		case (p.CutoverAfterS == nil) != (p.FreeFirst == nil):
			field := "policy.free_first"
			if p.CutoverAfterS == nil {
				field = "policy.cutover_after_s"
			}
			c.fail(&FieldError{field, "missing: cutover_after_s and free_first go together"})
		case p.CutoverAfterS != nil:
			in.Cutover = &Cutover{AfterS: c.number("policy.cutover_after_s", *p.CutoverAfterS, MaxSeconds), FreeFirst: *p.FreeFirst}
		}
	}
	if doc.RunningS != nil {
		in.RunningS = new(c.number("running_s", *doc.RunningS, MaxSeconds))
	}
	if c.err != nil {
		return BookInput{}, c.err
	}
	return in, nil
}

// checker holds decoded numbers to their bounds and keeps the first error,
// with the field's line.
type checker struct {
	root *yaml.Node
	err  error
}

func (c *checker) fail(err error) {
	var fe *FieldError
	if c.err == nil && errors.As(err, &fe) {
		c.err = decode.Errorf(decode.Line(c.root, fe.Field), fe.Field, "%s", fe.Msg)
	}
}

// number holds x to CheckNumber's bounds.
func (c *checker) number(field string, x, limit float64) float64 {
	if err := CheckNumber(field, x, limit); err != nil {
		c.fail(err)
		return 0
	}
	return x
}

// count holds x to a whole number in [0, MaxTokens].
func (c *checker) count(field string, x float64) int {
	if !num.Finite(x) || x != math.Trunc(x) {
		c.fail(&FieldError{field, "must be a whole number"})
		return 0
	}
	return int(c.number(field, x, MaxTokens))
}
