package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lanewatch/lanewatch/sampler"
	"github.com/lanewatch/lanewatch/series"
)

// A failed round's log line says where its points went (issue 18: never
// nowhere without saying so).
func TestRoundTroubleSaysWhere(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("book the round: %w: disk full", sampler.ErrNotBooked), "round not probed"},
		{fmt.Errorf("store round: %w: 401", series.ErrHoursNotRebuilt), "stored without its hours"},
		{fmt.Errorf("store round: %w", &series.RefusedError{Points: 2, DeadLetter: "data/dead.lp", Err: errors.New("403")}), "dead-letter file data/dead.lp"},
		{errors.New("store round: spool is full"), "reservations, written before the probes, still count them"},
	} {
		if got := roundTrouble(c.err); !strings.Contains(got, c.want) {
			t.Errorf("roundTrouble(%v) = %q, want it to say %q", c.err, got, c.want)
		}
	}
}
