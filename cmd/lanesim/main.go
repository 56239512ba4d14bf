// Command lanesim is a local stand-in LLM lane for demos, tests and
// benchmarks (package lanesim), an exact-delay lane with -exact, and with
// `lanesim history` a generator of probe history; docs/deploy.md ("A
// stand-in lane") says how its load is set.
//
// Lane config: api openai with base_url http://HOST:PORT/v1, or api anthropic
// with base_url http://HOST:PORT.
//
// Once listening it prints one line, "lanesim listening on http://HOST:PORT",
// and with -addr-file writes the URL to that file (removed again on exit). It
// stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lanewatch/lanewatch/internal/atomicfile"
	"github.com/lanewatch/lanewatch/internal/cli"

	"github.com/lanewatch/lanewatch/internal/lanesim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit("lanesim", err, os.Stderr)) // err as one line, and the exit status
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "history" {
		return runHistory(ctx, args[1:], stdout, stderr)
	}
	var listen, addrFile string
	var exact time.Duration
	var level slog.Level
	o := lanesim.DefaultOptions()
	fs := flag.NewFlagSet("lanesim", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lanesim [flags]        a stand-in lane: OpenAI and Anthropic streaming APIs\n       lanesim history [flags]  weeks of generated probe history (lanesim history -h)")
		fs.PrintDefaults()
	}
	fs.StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on (port 0: any free port)")
	fs.StringVar(&addrFile, "addr-file", "", "write the server URL to this file once listening (atomically; removed on exit)")
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log level: debug logs every request")
	fs.DurationVar(&exact, "exact", 0, "serve every request with exactly this wait to its first token, and its timing at GET /stats (the probe's accuracy benchmark; the queue flags are ignored)")

	fs.IntVar(&o.Slots, "slots", o.Slots, "generation slots; requests beyond them wait in a FIFO queue")
	fs.DurationVar(&o.Prefill, "prefill", o.Prefill, "time to first token once a request holds a slot")
	fs.DurationVar(&o.TokenInterval, "token-interval", o.TokenInterval, "time between two tokens")
	fs.IntVar(&o.Tokens, "tokens", o.Tokens, "tokens per reply (capped by the request's max_tokens)")
	fs.DurationVar(&o.KeepAlive, "keepalive", o.KeepAlive, "period of ': queued' SSE comments while a request waits (0: none)")

	fs.Float64Var(&o.Background, "background", o.Background, "synthetic background jobs arriving per minute (Poisson) at load multiplier 1; 0: off")
	fs.DurationVar(&o.BackgroundHold, "background-hold", o.BackgroundHold, "how long each background job holds a slot")
	fs.IntVar(&o.BackgroundBuffer, "background-buffer", o.BackgroundBuffer, "most background jobs waiting at once; further arrivals are dropped")
	curve := fs.String("curve", "", `background load multiplier by simulated hour of day (UTC), e.g. "0:1,9:4,14:8,20:2"; linear between points, wrapping at midnight`)
	hourSeconds := fs.Float64("hour-seconds", 0, "real seconds per simulated hour, to run a day in minutes (0: real time)")
	fs.DurationVar(&o.ClockOffset, "clock-offset", 0, "shift of the simulated clock from the real one, e.g. 5h")

	fs.Float64Var(&o.Fail429, "fail-429", 0, "probability (0..1) of a 429 with Retry-After: "+lanesim.RetryAfter)
	fs.Float64Var(&o.FailMidstream, "fail-midstream", 0, "probability (0..1) of an SSE error event half-way through a reply")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the fault and arrival draws (0: from the clock)")

	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return cli.Usagef("unexpected argument %q", fs.Arg(0))
	case exact < 0:
		return cli.Usagef("-exact %s: want 0 or more", exact)
	case o.Slots < 1:
		return cli.Usagef("-slots %d: want at least 1", o.Slots)
	case o.Tokens < 0:
		return cli.Usagef("-tokens %d: want 0 or more", o.Tokens)
	case o.Prefill < 0 || o.TokenInterval < 0 || o.KeepAlive < 0 || o.BackgroundHold < 0:
		return cli.Usagef("-prefill, -token-interval, -keepalive and -background-hold must not be negative")
	case o.Background < 0:
		return cli.Usagef("-background %g: want 0 or more", o.Background)
	case o.BackgroundBuffer < 0:
		return cli.Usagef("-background-buffer %d: want 0 or more", o.BackgroundBuffer)
	case *hourSeconds < 0:
		return cli.Usagef("-hour-seconds %g: want 0 or more", *hourSeconds)
	case !(o.Fail429 >= 0 && o.Fail429 <= 1):
		return cli.Usagef("-fail-429 %g: want a probability from 0 to 1", o.Fail429)
	case !(o.FailMidstream >= 0 && o.FailMidstream <= 1):
		return cli.Usagef("-fail-midstream %g: want a probability from 0 to 1", o.FailMidstream)
	}
	cv, err := lanesim.ParseCurve(*curve)
	if err != nil {
		return cli.Usagef("-curve: %w", err)
	}
	o.Curve = cv
	o.HourLength = time.Duration(*hourSeconds * float64(time.Second))
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	o.Logger = log

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	sim := lanesim.New(o)
	defer sim.Close()
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(sim.Close) // ends open streams so Shutdown can finish
	if exact > 0 {
		srv.Handler = lanesim.Exact(exact)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	url := "http://" + ln.Addr().String()
	if addrFile != "" {
		if err := atomicfile.Write(addrFile, []byte(url)); err != nil {
			_ = srv.Close()
			return fmt.Errorf("addr file: %w", err)
		}
		defer os.Remove(addrFile)
	}
	fmt.Fprintf(stdout, "lanesim listening on %s\n", url)
	log.Info("lanesim started", "url", url, "exact", exact, "slots", o.Slots, "prefill", o.Prefill,
		"token_interval", o.TokenInterval, "tokens", o.Tokens, "background_per_min", o.Background,
		"background_hold", o.BackgroundHold, "curve", o.Curve.String(), "hour_length", o.HourLength,
		"fail_429", o.Fail429, "fail_midstream", o.FailMidstream)

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	<-serveErr // http.ErrServerClosed
	log.Info("lanesim stopped", "served", sim.Stats().Served)
	return nil
}
