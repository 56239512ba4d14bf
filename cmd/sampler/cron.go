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
//
// The returned channel is closed when cron's scheduling goroutine has logged
// its last line after Stop: cron.Stop's context covers running jobs only, so
// the daemon waits on both before it returns and nothing logs after it.
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
