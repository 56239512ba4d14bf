package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A count out of bounds is an error naming its field and line (the edited
// line of utc_live.yaml), and the first error
// of a file is the one reported (yaml.go's `p.err == nil` → `!= nil` let a
// negative count through, and let a later error replace the first).
func TestParseFileCountErrors(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "golden", "utc_live.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(string) string
		want string
	}{
		{"negative samples", func(s string) string { return strings.Replace(s, "samples: 24\n", "samples: -1\n", 1) },
			"policy file: line 12: lanes[0].samples: must be >= 0"},
		{"failures past MaxTokens", func(s string) string { return strings.Replace(s, "failures: 1\n", "failures: 1000000000001\n", 1) },
			"policy file: line 22: lanes[1].failures: must be at most 1000000000000"},
		{"negative ceiling", func(s string) string {
			return strings.Replace(s, "    ceiling_tokens: 4000\n", "    ceiling_tokens: -4000\n", 1)
		},
			"policy file: line 72: classes[0].ceiling_tokens: must be >= 0"},
		{"negative next_est_tokens", func(s string) string {
			return strings.Replace(s, "      next_est_tokens: 800\n", "      next_est_tokens: -1\n", 1)
		}, "policy file: line 80: classes[0].book.next_est_tokens: must be >= 0"},
		{"the first of two count errors", func(s string) string {
			s = strings.Replace(s, "samples: 24\n", "samples: -1\n", 1)
			return strings.Replace(s, "failures: 1\n", "failures: -1\n", 1)
		}, "policy file: line 12: lanes[0].samples: must be >= 0"},
		{"a missing key before a count error", func(s string) string {
			s = strings.Replace(s, "basis: live\n", "", 1)
			return strings.Replace(s, "samples: 24\n", "samples: -1\n", 1)
		}, "policy file: line 2: basis: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := tc.edit(string(good))
			if bad == string(good) {
				t.Fatal("fixture unchanged")
			}
			if _, err := ParseFile([]byte(bad)); err == nil || err.Error() != tc.want {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
