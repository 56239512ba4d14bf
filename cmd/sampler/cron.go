package main

import (
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
)

// newCron builds the scheduler: hours in the config's zone, and a chain with
// SkipIfStillRunning outermost and Recover inside it (in v3.0.1, Recover
// outside SkipIfStillRunning would leak the skip lock after a panic), so
// rounds never overlap and a panicking round does not kill the daemon.
func newCron(loc *time.Location, log *slog.Logger) *cron.Cron {
	l := cronLogger{log}
	return cron.New(
		cron.WithLocation(loc),
		cron.WithLogger(l),
		cron.WithChain(cron.SkipIfStillRunning(l), cron.Recover(l)),
	)
}

// cronLogger adapts slog to cron.Logger; cron's chatty info goes to debug.
type cronLogger struct{ log *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) {
	if msg == "skip" {
		c.log.Warn("round skipped: the previous round is still running")
		return
	}
	c.log.Debug("cron "+msg, kv...)
}

func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.log.Error("cron "+msg, append(kv, "err", err)...)
}
