package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// store.retention_days: 0 or absent keeps every probe, a number of days
// prunes the file store, and an InfluxDB store refuses it (the server's
// retention policy decides there).
func TestRetentionDays(t *testing.T) {
	const lane = "lanes:\n  - {name: a, kind: free, api: openai, base_url: \"http://x/v1\", model: m}\n"
	cases := []struct {
		name, src string
		want      int
		err       string
	}{
		{"absent", lane, 0, ""},
		{"zero", "store: {retention_days: 0}\n" + lane, 0, ""},
		{"a year", "store: {retention_days: 365}\n" + lane, 365, ""},
		{"negative", "store: {retention_days: -1}\n" + lane, 0, `:1: store.retention_days: must be between 0 and 36500 (0 keeps every probe), got -1`},
		{"too long", "store: {retention_days: 36501}\n" + lane, 0, `store.retention_days: must be between 0 and 36500`},
		{"fraction", "store: {retention_days: 1.5}\n" + lane, 0, `:1: store.retention_days: want an integer, got "1.5"`},
		{"influx", "store: {kind: influx, url: \"http://h:8086\", retention_days: 30}\n" + lane, 0, `store.retention_days: kind file only: on InfluxDB, old probe and heartbeat points are deleted on the server (docs/schema.md, Retention)`},
		{"shorter than the calibrated rule reads", "store: {retention_days: 20}\n" + lane, 0, `store.retention_days: 20 days prunes probes the calibrated rule reads: it learns from twice policy.lookback_days (14), so keep at least 28`},
		{"as long as it reads", "store: {retention_days: 28}\n" + lane, 28, ""},
		{"short under rule max", "store: {retention_days: 3}\npolicy: {rule: max}\n" + lane, 3, ""},
		{"influx zero", "store: {kind: influx, url: \"http://h:8086\", retention_days: 0}\n" + lane, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(c.src), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(p)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one containing %q", err, c.err)
			case c.err == "" && cfg.Store.RetentionDays != c.want:
				t.Errorf("retention_days %d, want %d", cfg.Store.RetentionDays, c.want)
			}
		})
	}
}
