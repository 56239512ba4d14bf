package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// sampler -listen serves the JSON API over the config's policy files.
func TestListenServesTheAPI(t *testing.T) {
	d, addr, _ := servingDaemon(t)
	label := store.HourLabel(time.Now(), d.cfg.Location)
	f := policy.File{Hour: label, Timezone: store.OrUTC(d.cfg.Location).String(), Basis: policy.BasisLive}
	data, err := policy.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.cfg.Policy.Out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.cfg.Policy.Out, label+".yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/api/v1/policy?hour=" + label, 200, `{"hour":"` + label + `"`},
		{"/api/v1/lane?class=nope&hour=" + label, 404, `"code":"no_class"`},
		{"/api/v1/nope", 404, `"code":"not_found"`},
	} {
		resp, err := http.Get("http://" + addr + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %d %s, want %d with %s", tc.path, resp.StatusCode, body, tc.status, tc.want)
		}
	}
}
