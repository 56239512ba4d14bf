package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/internal/httpserve"
)

const serveUsage = `usage: policygen serve -config F [-listen ADDR] [-dir DIR]

Serves the read-only JSON API over the policy files (docs/api.md) on ADDR
(default 127.0.0.1:9465, loopback only), for hosts without a sampler:
GET /api/v1/policy, /api/v1/lane, /api/v1/next and POST /api/v1/book. It
reads policy.out of the config (or -dir) and never writes, probes or reads
a key. It prints "policygen serve listening on http://ADDR" on stderr and
runs until SIGINT or SIGTERM.

`

// defaultServeAddr is loopback: the API is for the host's own jobs.
const defaultServeAddr = "127.0.0.1:9465"

// runServe is `policygen serve`.
func (e *env) runServe(ctx context.Context, args []string) error {
	fset := newFlags("serve", serveUsage)
	listen := fset.String("listen", defaultServeAddr, "`address` to listen on")
	dirFlag := fset.String("dir", "", "folder of the policy files (default: policy.out of the config)")
	if err := fset.parse(args, e.stderr, ""); err != nil {
		return err
	}
	cfg, err := config.Load(*fset.Config)
	if err != nil {
		return err
	}
	opts := cfg.APIOptions()
	opts.Now = e.now
	if opts.Folder, err = folderOf(cfg, "serve", *dirFlag); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("serve: -listen: %w", err)
	}
	// The sampler's bounds on its -listen visitors.
	srv, capped := httpserve.New(ln, api.Handler(opts), httpserve.DefaultLimits())
	fmt.Fprintf(e.stderr, "policygen serve listening on http://%s\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(capped) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
