package probe

import (
	"context"
	"fmt"
	"testing"
)

// Every 2xx status is a stream to read, and nothing outside 200-299 is.
func TestTwoHundredsAreStreams(t *testing.T) {
	for _, c := range []struct {
		status int
		want   Outcome
	}{{200, OK}, {201, OK}, {299, OK}, {300, HTTPError}} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			steps := okOpenAIStream.steps
			s, _ := Run(context.Background(), target(OpenAI, serve(t, script{status: c.status, steps: steps})))
			if s.Outcome != c.want || s.Status != c.status {
				t.Fatalf("status %d: outcome %s (%s), want %s", s.Status, s.Outcome, s.Detail, c.want)
			}
		})
	}
}
