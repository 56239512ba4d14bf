package main

import (
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
)

// newCron builds the scheduler: rounds never overlap, and a panicking one
// does not kill the daemon (Recover inside SkipIfStillRunning, or v3.0.1
// leaks the skip lock). The channel is closed when cron's scheduler has
// logged its last line after Stop, which cron.Stop's context does not cover.
func newCron(loc *time.Location, log *slog.Logger) (*cron.Cron, <-chan struct{}) {
	l := cronLogger{log: log, stopped: make(chan struct{})}
	c := cron.New(
		cron.WithLocation(loc),
		cron.WithLogger(l),
		cron.WithChain(cron.SkipIfStillRunning(l), cron.Recover(l)),
	)
	return c, l.stopped
}

// cronLogger adapts slog to cron.Logger; cron's chatty info goes to debug.
type cronLogger struct {
	log     *slog.Logger
	stopped chan struct{} // closed at cron's "stop", its scheduler's last word
}

func (c cronLogger) Info(msg string, kv ...any) {
	switch msg {
	case "stop":
		close(c.stopped)
		return
	case "skip":
		c.log.Warn("round skipped: the previous round is still running")
		return
	}
	c.log.Debug("cron "+msg, kv...)
}

func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.log.Error("cron "+msg, append(kv, "err", err)...)
}
