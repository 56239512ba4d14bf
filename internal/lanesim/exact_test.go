package lanesim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Exact streams a role chunk, then one token no sooner than the delay after
// it read the request, then the finish and [DONE]; /stats gives each
// model's timing once.
func TestExact(t *testing.T) {
	const delay = 30 * time.Millisecond
	srv := httptest.NewServer(Exact(delay))
	defer srv.Close()
	for _, model := range []string{"m1", "m2"} {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"`+model+`","stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || string(body) != exactRole+exactToken {
			t.Fatalf("%s: content-type %q, body\n%s", model, ct, body)
		}
	}
	stats := func() map[string]ExactRecord {
		resp, err := http.Get(srv.URL + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var recs map[string]ExactRecord
		if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil {
			t.Fatal(err)
		}
		return recs
	}
	recs := stats()
	if len(recs) != 2 {
		t.Fatalf("stats %v, want m1 and m2", recs)
	}
	for model, r := range recs {
		if r.Held < int64(delay) || r.Wrote-r.Read != 0 && r.Wrote-r.Read < int64(delay) {
			t.Errorf("%s: held %v (read %d, wrote %d), want at least %v", model, time.Duration(r.Held), r.Read, r.Wrote, delay)
		}
	}
	if again := stats(); len(again) != 0 {
		t.Errorf("stats not cleared: %v", again)
	}
}
