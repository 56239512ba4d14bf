package redact

import "testing"

func TestURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://h:8086/v1":                 "http://h:8086/v1",
		"http://u:hunter2@h/v1":            "http://h/v1",
		"https://h/v1?key=hunter2#hunter2": "https://h/v1",
		"https:u:hunter2@h":                "https:",
		"http://h/%zz":                     "(unparsable URL)",
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%q) = %q, want %q", raw, got, want)
		}
	}
}
