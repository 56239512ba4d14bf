package store

import (
	"errors"
	"fmt"
	"strings"
)

// errReadOnly is returned by writes to a read-only store.
var errReadOnly = errors.New("store is open read-only")

// RefusedError reports points a store refused for good. Status is the
// HTTP status (0 when not known). A Spool moves them to its dead-letter file
// and says so in DeadLetter; its refusal carries the store's Status.
type RefusedError struct {
	Points     int
	Status     int
	DeadLetter string // where the points went; empty when nowhere, or when a Spool kept them (its error says so)
	Err        error
}

func (e *RefusedError) Error() string {
	if e.DeadLetter == "" {
		return fmt.Sprintf("refused %d points: %v", e.Points, e.Err)
	}
	return fmt.Sprintf("refused %d points: %v; moved to dead-letter file %s", e.Points, e.Err, e.DeadLetter)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// joinErrors is errors.Join on one line ("; " between the errors), so a
// caller can print it as one line. It returns nil when all errs are nil.
func joinErrors(errs []error) error {
	var nonNil []error
	for _, err := range errs {
		if err != nil {
			nonNil = append(nonNil, err)
		}
	}
	switch len(nonNil) {
	case 0:
		return nil
	case 1:
		return nonNil[0]
	}
	return &multiError{errs: nonNil}
}

type multiError struct{ errs []error }

func (e *multiError) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e *multiError) Unwrap() []error { return e.errs }
