package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/storeopen"
	"github.com/lanewatch/lanewatch/series"
)

// openStore opens the configured store for reading. The embedded file is
// opened read-only (no writer lock), so policygen runs while a sampler
// appends to it.
func openStore(ctx context.Context, cfg *config.Config, stderr io.Writer, lookupEnv func(string) (string, bool)) (series.Store, error) {
	return storeopen.OpenReadOnly(ctx, cfg, warner(stderr), lookupEnv)
}

// warner prints a store warning as one line: "policygen: warning: msg k=v ...".
func warner(w io.Writer) func(msg string, args ...any) {
	return func(msg string, args ...any) {
		var b strings.Builder
		b.WriteString("policygen: warning: ")
		b.WriteString(msg)
		for i := 0; i+1 < len(args); i += 2 {
			fmt.Fprintf(&b, " %v=%q", args[i], fmt.Sprint(args[i+1]))
		}
		b.WriteByte('\n')
		_, _ = io.WriteString(w, b.String())
	}
}
