package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
)

// TestIsTransient: a failure may go away by itself (network, 408, 429, a
// plain 5xx) unless the server says the bucket is missing or the token may
// not use it, which InfluxDB 1.8's Flux answers with a 500 too.
func TestIsTransient(t *testing.T) {
	he := func(status int, msg string) error {
		return &ihttp.Error{StatusCode: status, Code: http.StatusText(status), Message: msg}
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"network", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), true},
		{"cancelled", context.Canceled, true},
		{"408", he(408, "request timeout"), true},
		{"429", he(429, "too many requests"), true},
		{"500", he(500, "internal error"), true},
		{"503", he(503, "service unavailable"), true},
		{"wrapped 502", fmt.Errorf("read: %w", he(502, "bad gateway")), true},
		{"400", he(400, "bad query"), false},
		{"401", he(401, "authorization failed"), false},
		{"403", he(403, `user "reader" requires WRITE for database "lanewatch"`), false},
		{"404", he(404, "not found"), false},
		{"flux 500 missing database", he(500, `failed to initialize execute state: database not found: "nope"`), false},
		{"flux 500 missing retention policy", he(500, `failed to initialize execute state: retention policy not found: x`), false},
		{"flux 500 without read permission", he(500, `failed to initialize execute state: user "stranger" requires READ for database "lanewatch"`), false},
		{"flux 500 without write permission", he(500, `user "stranger" requires WRITE for database "lanewatch"`), false},
		{"500 unauthorized", he(500, "unauthorized access"), false},
		{"500 authorization failed", he(500, "authorization failed"), false},
		{"wrapped flux 500 without read permission", fmt.Errorf("read: %w", he(500, `requires READ for database "x"`)), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := isTransient(c.err); got != c.want {
				t.Errorf("isTransient(%v) = %v, want %v", c.err, got, c.want)
			}
			if got := unreachable(c.err); got != c.want {
				t.Errorf("unreachable(%v) = %v, want %v", c.err, got, c.want)
			}
			s := &Influx{}
			if got := errors.Is(s.classify(c.err), ErrUnavailable); got != c.want {
				t.Errorf("classify(%v) is ErrUnavailable = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// Only a server on this host is asked for uncompressed answers.
func TestIsLoopback(t *testing.T) {
	for _, c := range []struct {
		host string
		want bool
	}{
		{"127.0.0.1", true}, {"127.8.9.1", true}, {"::1", true}, {"localhost", true},
		{"10.0.0.1", false}, {"influx.example.com", false}, {"", false}, {"::ffff:10.0.0.1", false},
	} {
		if got := isLoopback(c.host); got != c.want {
			t.Errorf("isLoopback(%q) = %v, want %v", c.host, got, c.want)
		}
	}
}
