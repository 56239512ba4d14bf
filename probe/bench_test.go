package probe

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkQueueError probes N lanes at once against one server that sends
// the first token exactly 200 ms after each request arrives, and reports
// the median and max of (measured queue_s - 200 ms): the measurement error,
// i.e. connect, request, scheduling and delivery overhead. It also reports
// the same for ServerQueueS (request written → first token), which leaves
// out the client's connect and the scheduling before the request went out.
//
//	go test -run '^$' -bench QueueError -benchtime 3x ./probe
func BenchmarkQueueError(b *testing.B) {
	const delay = 200 * time.Millisecond
	url := serve(b, script{steps: []step{
		{0, oaRole() + ": queued\n\n"}, {delay, oaText("ok") + oaFinish() + oaDone},
	}})
	cases := []struct{ lanes, bound int }{
		{1, 0}, {16, 0}, {50, 0}, {200, 0}, {500, 0},
		// The sampler's default: every lane in one round, 16 in flight.
		{200, 16}, {500, 16},
	}
	for _, c := range cases {
		name := fmt.Sprintf("lanes=%d", c.lanes)
		if c.bound > 0 {
			name += fmt.Sprintf(",concurrency=%d", c.bound)
		}
		b.Run(name, func(b *testing.B) {
			var queue, server []float64
			for b.Loop() {
				q, s := probeLanes(b, url, c.lanes, c.bound, delay)
				queue, server = append(queue, q...), append(server, s...)
			}
			report(b, queue, "")
			report(b, server, "server-")
		})
	}
}

// report sorts errs and reports its median, p99 and max in ms.
func report(b *testing.B, errs []float64, prefix string) {
	slices.Sort(errs)
	if errs[0] < 0 {
		b.Fatalf("a %squeue fell %.3f ms below the true wait", prefix, -errs[0])
	}
	b.ReportMetric(errs[len(errs)/2], prefix+"median-err-ms")
	b.ReportMetric(errs[len(errs)*99/100], prefix+"p99-err-ms")
	b.ReportMetric(errs[len(errs)-1], prefix+"max-err-ms")
}

// probeLanes runs one probe per lane concurrently (at most bound at once when
// bound > 0, as the sampler does) and returns each probe's queue error and
// server-side queue error in milliseconds.
func probeLanes(b *testing.B, url string, lanes, bound int, delay time.Duration) (queue, server []float64) {
	queue, server = make([]float64, lanes), make([]float64, lanes)
	if bound <= 0 {
		bound = lanes
	}
	sem := make(chan struct{}, bound)
	var wg sync.WaitGroup
	var failed sync.Once
	for i := range lanes {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tg := target(OpenAI, url)
			tg.Lane = fmt.Sprintf("lane%d", i)
			s, err := Run(context.Background(), tg)
			if err != nil {
				failed.Do(func() { b.Errorf("lane %d: %v", i, err) })
				return
			}
			queue[i] = (s.QueueS() - delay.Seconds()) * 1000
			server[i] = (s.QueueS() - delay.Seconds()) * 1000
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return queue, server
}
