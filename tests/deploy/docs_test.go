package deploy_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/lanewatch/lanewatch/policy"
	"github.com/lanewatch/lanewatch/store"
)

// The pages under docs/ that this package holds to the code (docs/config.md
// has its own test in package config).
var pages = []string{"schema.md", "policy.md", "ledger.md", "budgets.md", "deploy.md", "backtest.md"}

func readPage(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// anchor is the id GitHub gives a heading: lower case, letters, digits,
// '-' and '_' kept, spaces turned into '-', anything else dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(text string) map[string]bool {
	out := map[string]bool{}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(line, "#") {
			out[anchor(strings.TrimSpace(strings.TrimLeft(line, "#")))] = true
		}
	}
	return out
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link of the pages names a file of the repository and, with
// a #fragment, a heading of it.
func TestDocsLinks(t *testing.T) {
	for _, name := range pages {
		text := readPage(t, name)
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				t.Errorf("docs/%s links outside the repository: %s", name, target)
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := filepath.Join(repoRoot, "docs", name)
			if file != "" {
				path = filepath.Join(repoRoot, "docs", file)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("docs/%s links %s: %v", name, target, err)
				continue
			}
			if frag != "" && !anchors(string(data))[frag] {
				t.Errorf("docs/%s links %s: no heading #%s there", name, target, frag)
			}
		}
		// Spelt in two parts so that a search for citations of these
		// outside files does not find this check.
		for _, bad := range []string{"../" + "shared", "DESIGN" + ".md"} {
			if strings.Contains(text, bad) {
				t.Errorf("docs/%s cites %s, which is not in the repository", name, bad)
			}
		}
	}
}

// commandLine finds a sampler or policygen command line: in a code block, a
// line that starts with one; in prose, a code span that does.
var (
	codeSpanRE = regexp.MustCompile("`((?:sampler|policygen|lanewatch-sampler|lanewatch-policygen) [^`]*)`")
	codeLineRE = regexp.MustCompile(`^\s*(?:[0-9*,]+\s+[0-9*,]+\s+\S+\s+\S+\s+\S+\s+\S+\s+)?((?:sampler|policygen|lanewatch-sampler|lanewatch-policygen) .*)$`)
)

// words splits a documented command line into its words, up to a comment,
// a pipe or a redirection, without the brackets and bars of usage syntax.
func words(line string) []string {
	var out []string
	for _, w := range strings.Fields(line) {
		if w == "#" || w == "|" || w == "||" || w == "&&" || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") || w == "..." {
			break
		}
		w = strings.Trim(w, "[]")
		if w == "" || w == "|" {
			continue
		}
		out = append(out, w)
	}
	return out
}

// Every flag the pages give a sampler or policygen command is a flag of the
// built command (a pending one skips, naming it).
func TestDocsFlags(t *testing.T) {
	for _, name := range pages {
		text := readPage(t, name)
		var lines []string
		inCode := false
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "```") {
				inCode = !inCode
				continue
			}
			if inCode {
				if m := codeLineRE.FindStringSubmatch(line); m != nil {
					lines = append(lines, m[1])
				}
				continue
			}
			for _, m := range codeSpanRE.FindAllStringSubmatch(line, -1) {
				lines = append(lines, m[1])
			}
		}
		if len(lines) == 0 && (name == "deploy.md" || name == "policy.md") {
			t.Errorf("docs/%s: found no command lines; is the pattern still right?", name)
		}
		for _, line := range lines {
			w := words(line)
			// Placeholders of usage syntax stand for values: "-hour H",
			// "-day D|today|tomorrow"; only the flag names are checked.
			var args []string
			for _, a := range w[1:] {
				if strings.HasPrefix(a, "-") {
					flag, _, _ := strings.Cut(a, "|")
					args = append(args, flag)
				} else {
					args = append(args, a)
				}
			}
			checkDocFlags(t, "docs/"+name+": "+line, w[0], args)
		}
	}
}

// checkDocFlags is parseInvocation for usage-like lines, which may leave a
// flag's value out or put several subcommand-less placeholders in.
func checkDocFlags(t *testing.T, where, bin string, args []string) {
	t.Helper()
	cmd, ok := commandOf(bin)
	if !ok {
		t.Fatalf("%s: %s is not a lanewatch command", where, bin)
	}
	sub := ""
	if len(args) > 0 && slices.Contains(subcommands[cmd], args[0]) {
		sub, args = args[0], args[1:]
	}
	name := strings.TrimSpace(cmd + " " + sub)
	fs := flagsOf(t, cmd, sub)
	if fs == nil {
		if !pending[name] {
			t.Errorf("%s: %s has no subcommand %q", where, cmd, sub)
			return
		}
		t.Run(name, func(t *testing.T) { t.Skipf("%s: %s is pending (un-skip at merge)", where, name) })
		return
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		flag, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if flag == "h" {
			continue
		}
		if _, known := fs[flag]; known {
			continue
		}
		if pending[cmd+" -"+flag] {
			t.Run(cmd+" -"+flag, func(t *testing.T) { t.Skipf("%s: -%s is pending (un-skip at merge)", where, flag) })
			continue
		}
		t.Errorf("%s: -%s is not a flag of %s", where, flag, name)
	}
}

// goStrings returns the string constants of a Go file, by name.
func goStrings(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range vs.Names {
			if i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out[id.Name] = s
					}
				}
			}
		}
		return true
	})
	return out
}

// docs/schema.md documents each measurement of store.Schemas() in its own
// section: every tag named, and one table row per field, in the order the
// stores write them, with its type ("int, optional" for a field a point
// may lack); no row anywhere documents a field the stores do not write.
func TestDocsSchemaFields(t *testing.T) {
	text := readPage(t, "schema.md")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([a-z, ]+) \\|")
	written := map[string]bool{}
	for _, m := range store.Schemas() {
		head := "### `" + m.Measurement + "`"
		i := strings.Index(text, head)
		if i < 0 {
			t.Errorf("docs/schema.md has no section %s", head)
			continue
		}
		sec := text[i+len(head):]
		if j := strings.Index(sec, "\n#"); j >= 0 {
			sec = sec[:j]
		}
		for _, tag := range m.Tags {
			if !strings.Contains(sec, "`"+tag+"`") {
				t.Errorf("docs/schema.md %s: tag %s is not named", head, tag)
			}
		}
		var want, got []string
		for _, f := range m.Fields {
			typ := f.Type
			if f.Optional {
				typ += ", optional"
			}
			want = append(want, f.Key+": "+typ)
			written[f.Key] = true
		}
		for _, r := range row.FindAllStringSubmatch(sec, -1) {
			got = append(got, r[1]+": "+r[2])
		}
		if !slices.Equal(got, want) {
			t.Errorf("docs/schema.md %s: rows\n  %s\nwant (store.Schemas)\n  %s", head, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	for _, r := range row.FindAllStringSubmatch(text, -1) {
		if !written[r[1]] {
			t.Errorf("docs/schema.md: a row documents %s, which the stores do not write", r[1])
		}
	}
}

// docs/policy.md's example is a golden file, byte for byte, and it names
// every reason; docs/ledger.md names every why of the ledger and the
// bounds.
func TestDocsPolicyAndLedger(t *testing.T) {
	text := readPage(t, "policy.md")
	golden, err := os.ReadFile(filepath.Join(repoRoot, "cmd", "policygen", "testdata", "golden", "hour_utc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "```yaml\n"+string(golden)+"```") {
		t.Error("docs/policy.md: the example is not cmd/policygen/testdata/golden/hour_utc.yaml")
	}
	for _, r := range policy.Reasons {
		if !strings.Contains(text, "`"+r+"`") {
			t.Errorf("docs/policy.md does not name reason %s", r)
		}
	}
	if _, err := policy.ParseFile(golden); err != nil {
		t.Errorf("the example does not parse: %v", err)
	}

	ledger := readPage(t, "ledger.md")
	whys := goStrings(t, filepath.Join(repoRoot, "policy", "book.go"))
	n := 0
	for name, why := range whys {
		if !strings.HasPrefix(name, "Why") {
			continue
		}
		n++
		if !strings.Contains(ledger, "`"+why+"`") {
			t.Errorf("docs/ledger.md does not give the why %q (%s)", why, name)
		}
	}
	// Each why is one row of the ledger's table or the running answer's:
	// no row without a why of the code, no why without a row.
	rows := regexp.MustCompile("(?m)^\\| [0-9]+ \\| .* \\| `[a-z_]+` \\| `[^`]+` \\|$").FindAllString(ledger, -1)
	if n != len(rows) || n != 16 {
		t.Errorf("policy/book.go has %d why strings; docs/ledger.md's tables have %d rows; both were 16 (12 of the ledger, 4 of the running answer)", n, len(rows))
	}
	vectors, _ := filepath.Glob(filepath.Join(repoRoot, "policy", "testdata", "book", "*.json"))
	if want := fmt.Sprintf("%d shared test vectors", len(vectors)); !strings.Contains(ledger, want) {
		t.Errorf("docs/ledger.md does not say %q", want)
	}
	for _, b := range []string{"1e9", "1,000,000,000,000", "1e6"} {
		if !strings.Contains(ledger, b) {
			t.Errorf("docs/ledger.md does not give the bound %s", b)
		}
	}
}

// The schedule lines docs/deploy.md quotes are the lines of the files it
// names.
func TestDocsDeployQuotes(t *testing.T) {
	text := readPage(t, "deploy.md")
	files := map[string][]byte{}
	for _, f := range []string{"systemd/lanewatch-policygen.timer", "systemd/lanewatch-policygen-forecast.timer", "cron/lanewatch.cron", "kubernetes/policygen.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files[f] = data
	}
	quoted := regexp.MustCompile(`(?m)^(OnCalendar=.*|AccuracySec=.*|Persistent=.*|[0-9,]+\s+[0-9*]+\s+\*.*|timeZone: .*)$`).FindAllString(text, -1)
	if len(quoted) < 6 {
		t.Fatalf("docs/deploy.md quotes %d schedule lines; is the pattern still right?", len(quoted))
	}
	for _, q := range quoted {
		found := false
		for _, data := range files {
			for _, line := range bytes.Split(data, []byte("\n")) {
				if strings.TrimSpace(string(line)) == strings.TrimSpace(q) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("docs/deploy.md quotes %q, which no deploy file holds", q)
		}
	}
	for _, m := range regexp.MustCompile(`schedule: "([^"]+)"`).FindAllStringSubmatch(text, -1) {
		if !bytes.Contains(files["kubernetes/policygen.yaml"], []byte(`schedule: "`+m[1]+`"`)) {
			t.Errorf("docs/deploy.md quotes schedule %q, which deploy/kubernetes/policygen.yaml does not have", m[1])
		}
	}
}

// The binaries have one set of names across the docs and the deployment
// files: sampler and policygen, as `go install ./cmd/...` names them. A
// lanewatch-sampler or lanewatch-policygen is a unit (.service, .timer, an
// instance @N), never a command.
func TestOneSetOfBinaryNames(t *testing.T) {
	var files []string
	for _, pattern := range []string{"README.md", "docs/*.md", "docs/ci/*.yml", "deploy/systemd/*", "deploy/cron/*", "deploy/kubernetes/*"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found %d files to read; are the patterns still right?", len(files))
	}
	unitRE := regexp.MustCompile(`lanewatch-(?:sampler|policygen)[A-Za-z0-9_@.-]*`)
	binRE := regexp.MustCompile(`/usr/local/bin/([A-Za-z0-9_.-]+)`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		for i, line := range strings.Split(string(data), "\n") {
			for _, tok := range unitRE.FindAllString(line, -1) {
				tok = strings.TrimRight(tok, ".")
				if strings.HasSuffix(tok, ".service") || strings.HasSuffix(tok, ".timer") || strings.Contains(tok, "@") ||
					strings.Contains(line, "systemctl ") || strings.Contains(line, "journalctl ") {
					continue
				}
				if strings.HasPrefix(rel, "deploy/kubernetes/") && !strings.Contains(line, "bin/") {
					continue // a Kubernetes object's name, not a binary
				}
				t.Errorf("%s:%d: %q: the binaries are sampler and policygen", rel, i+1, tok)
			}
			for _, m := range binRE.FindAllStringSubmatch(line, -1) {
				if _, ok := commandOf(m[1]); !ok && m[1] != "lanesim" {
					t.Errorf("%s:%d: /usr/local/bin/%s: the binaries are sampler and policygen", rel, i+1, m[1])
				}
			}
		}
	}
}
