package page

import (
	"bytes"
	"errors"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/lanewatch/lanewatch/policy"
)

func render(t *testing.T, p Page) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRenderGolden pins the whole document for one page (fixed times, a
// stand-in chart); -update rewrites it.
func TestRenderGolden(t *testing.T) {
	got := render(t, testPage(tinyChart))
	path := filepath.Join("testdata", "page.golden.html")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./sampler/page -run Golden -update)", err)
	}
	if got != string(want) {
		t.Errorf("rendered page differs from %s (go test ./sampler/page -run Golden -update rewrites it); got:\n%s", path, got)
	}
}

// TestRenderShows checks what each part of the page says in the states a
// sampler can be in.
func TestRenderShows(t *testing.T) {
	full := testPage(tinyChart)
	sick := full
	sick.Healthy, sick.Problem = false, "store: dial tcp 127.0.0.1:8086: connection refused"
	sick.Policy, sick.PolicyErr = nil, "no policy file for 2026-11-30T14: /srv/p/2026-11-30T14.yaml does not exist; the sampler writes it after its next round"
	sick.Chart = ""
	bare := Page{Now: fixedNow, Healthy: true}
	badChart := full
	badChart.Chart = `<svg></svg><script>alert(1)</script>`

	for _, tc := range []struct {
		name      string
		page      Page
		want, not []string
	}{
		{"full", full,
			[]string{
				`<span class="badge ok">healthy</span>`, `<code>*/10 * * * *</code>`, ">1/2<", "file /var/lib/lanewatch/samples.lp",
				`datetime="2026-11-30T14:10:00Z">2026-11-30T14:10:00Z</time> <span class="nw">(in 2m)</span>`,
				">groq-llama</h3>", ">gemini-flash</h3>", ">openai-mini</h3>",
				`<span class="badge warn">backing off</span>`, `<span class="badge ok">ok</span>`,
				"skips it: quota until 14:30", `<dt>last failure</dt><dd class="bad-t">rate_limited (HTTP 429): Retry-After 1800</dd>`, `<span class="num bad-t">0</span>`, ">842<",
				`>&gt;30.0</td>`, ">12.4<", ">11-29 23:50<", `class="bad-t">rate_limited<`,
				"<strong>google</strong></td><td>gemini-flash</td>", `<td class="num bad-t">0</td>`, "America/Los_Angeles",
				"file <code>/srv/lanewatch/policies/2026-11-30T14.yaml</code>, written <time class=\"mono\" datetime=\"2026-11-30T14:03:00Z\">2026-11-30T14:03:00Z</time> <span class=\"nw\">(4m ago)</span> · hour",
				"hour <strong>2026-11-30T14</strong>", "sites eu-1, us-1", ">quota_exhausted<", ">61.25<", ">0.84<",
				">interactive<", "groq-llama, openai-mini", string(tinyChart),
				"Generated 2026-11-30T14:07:12Z", "Times are in UTC.", "times UTC</small>",
			},
			[]string{"unhealthy", "No data", "No policy", "not announced"},
		},
		{"unhealthy, no policy, no chart", sick,
			[]string{`<span class="badge bad">unhealthy</span>`, `<p class="problem">store: dial tcp 127.0.0.1:8086: connection refused</p>`,
				"/srv/p/2026-11-30T14.yaml does not exist; the sampler writes it after its next round", "No data for the last 7 days."},
			[]string{"<svg", "hour <strong>"},
		},
		{"bare", bare,
			[]string{"<small>status</small>", "all lanes", "not scheduled", "This sampler owns no lanes.", "No quota groups",
				"No policy for this hour.", "No data for the chart."},
			[]string{"<table", "<svg"},
		},
		{"chart that is not one svg element", badChart,
			[]string{"Chart left out: the chart is not one SVG element."},
			[]string{"<script", "<svg"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := render(t, tc.page)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("page has %q", n)
				}
			}
		})
	}
}

// The page shows every time in its zone (the config's) and says which: a
// page in New York has no UTC time in it. A lane in no quota group that
// announced no quota has no quota rows; one that did has them (issue 31).
func TestRenderOneZoneAndQuotaRows(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	p := testPage(tinyChart)
	p.Location = ny
	got := render(t, p)
	stamps := regexp.MustCompile(`datetime="([^"]+)">([^<]+)<`).FindAllStringSubmatch(got, -1)
	if len(stamps) < 10 {
		t.Fatalf("%d <time> elements, want the page's many", len(stamps))
	}
	for _, m := range stamps {
		if at, err := time.Parse(time.RFC3339, m[1]); err != nil || !strings.HasSuffix(m[1], "-05:00") || at.IsZero() {
			t.Errorf("<time datetime=%q>: not a time in America/New_York (-05:00)", m[1])
		}
	}
	for _, want := range []string{"times America/New_York</small>", "Times are in America/New_York.",
		">09:00</time>", "Generated 2026-11-30T09:07:12-05:00"} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	lanes := map[string]string{}
	for _, a := range strings.Split(got, "<article")[1:] {
		a, _, _ = strings.Cut(a, "</article>")
		lanes[a[strings.Index(a, "<h3>")+4:strings.Index(a, "</h3>")]] = a
	}
	if a := lanes["openai-mini"]; strings.Contains(a, "quota") {
		t.Errorf("openai-mini (no quota group, none announced) has quota rows:\n%s", a)
	}
	if a := lanes["groq-llama"]; !strings.Contains(a, "<dt>quota left</dt><dd><span class=\"num\">842</span>") {
		t.Errorf("groq-llama lacks its quota left:\n%s", a)
	}
	if a := lanes["gemini-flash"]; !strings.Contains(a, "last failure") {
		t.Errorf("gemini-flash does not say why it fails:\n%s", a)
	}
}

// hostile are strings a lane's server, a config or a store might hand the
// page; none may become markup.
var hostile = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(1)>`,
	`'><svg onload=alert(1)>`,
	`javascript:alert(1)`,
	`</td></tr></table><iframe src="javascript:alert(1)">`,
	`</style><script>alert(1)</script>`,
	`</title><script>alert(1)</script>`,
	`<!--`,
	`&lt;script&gt;alert(1)&lt;/script&gt;`,
	"Ünïcødé ✓ 日本語 \u202eevil\u202c 🚦",
}

// hostilePage puts s in every string field of a page.
func hostilePage(s string) Page {
	p := Page{
		Now: fixedNow, Site: s, Shard: s, Schedule: s, NextRound: at(14, 10), Store: s, Healthy: false, Problem: s,
		PolicyPath: s, PolicyWritten: at(14, 3),
		Lanes: []Lane{{
			Name: s, Kind: s, Quota: s, Skip: s, Why: s, QuotaKnown: true, BackoffUntil: at(14, 30), QuotaReset: at(14, 30),
			Probes: []Probe{{Time: at(14, 0), Outcome: s}, {Time: at(13, 50), Outcome: s, OK: true, QueueS: 1}},
		}},
		Groups: []Group{{Name: s, PerDay: 10, Spent: 3, Left: 7, Timezone: s}},
		Policy: &policy.File{
			Hour: s, Timezone: s, Basis: s, Sites: []string{s, s}, Records: 1,
			Lanes:   []policy.Lane{{Name: s, Kind: s, Reason: s}},
			Classes: []policy.Class{{Name: s, DeadlineS: 1, Lanes: []string{s}}, {Name: s}},
		},
		ChartDays: 7,
	}
	return p
}

// TestRenderEscapes feeds hostile strings through every string field and
// parses the page back as a browser would: the markup has only the page's
// own elements and attributes, and each string comes back as the same text.
func TestRenderEscapes(t *testing.T) {
	_, clean := elements(t, render(t, hostilePage("plain")))
	for _, s := range hostile {
		t.Run(s, func(t *testing.T) {
			got := render(t, hostilePage(s))
			if strings.ContainsAny(s, `<>"'&`) && strings.Contains(got, s) {
				t.Errorf("the page has %q unescaped", s)
			}
			for _, raw := range []string{"<script", "<img", "<iframe", "<svg", "</style><", "</title><"} {
				if strings.Contains(s, raw) && strings.Contains(got, raw) {
					t.Errorf("the raw %q is in the page", raw)
				}
			}
			tags, text := elements(t, got)
			for tag := range tags {
				if !pageTags[tag] {
					t.Errorf("element <%s> in the page", tag)
				}
			}
			if n, m := strings.Count(text, s), strings.Count(clean, "plain"); n < m {
				t.Errorf("the text has %q %d times, want at least %d (every field)", s, n, m)
			}
		})
	}
}

// pageTags are the elements the page's own markup uses.
var pageTags = map[string]bool{}

func init() {
	for _, tag := range strings.Fields(`html head meta title link style body main section div h1 h2 h3 small span
		dl dt dd code nav a article header table thead tbody tr th td time p strong meter figure figcaption footer`) {
		pageTags[tag] = true
	}
}

// elements parses page with x/net/html's tokenizer (the HTML5 rules a
// browser follows) and returns the elements it opens and its text (style
// and title included). It fails the test on an event-handler attribute or
// a URL attribute that is not the page's own.
func elements(t *testing.T, page string) (map[string]bool, string) {
	t.Helper()
	tags := map[string]bool{}
	var text strings.Builder
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			if !errors.Is(z.Err(), io.EOF) {
				t.Fatal(z.Err())
			}
			return tags, text.String()
		case html.TextToken:
			text.Write(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			tags[tok.Data] = true
			for _, a := range tok.Attr {
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("<%s %s=%q>: an event handler", tok.Data, a.Key, a.Val)
				}
				if (a.Key == "href" || a.Key == "src") && !ownURL(a.Val) {
					t.Errorf("<%s %s=%q>: a URL the page does not link", tok.Data, a.Key, a.Val)
				}
			}
		}
	}
}

func ownURL(u string) bool {
	switch u {
	case "data:,", "#lanes", "#budgets", "#policy", "#chart", "/metrics", "/healthz":
		return true
	}
	return false
}

// TestChartBreakout: the chart is the one value not escaped. A chart drawn
// by package swings stays one <svg> element even with hostile lane names
// (its SVG canvas escapes text), and a chart that is not one plain <svg>
// element is left out.
func TestChartBreakout(t *testing.T) {
	real := swingsChart(t, "a", "b")
	evil := swingsChart(t, `</svg><script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`)
	for _, tc := range []struct {
		name   string
		chart  template.HTML
		inline bool
	}{
		{"swings", real, true},
		{"swings, hostile lane names", evil, true},
		{"empty", "", false},
		{"blank", " \n", false},
		{"comment first", "<!-- made by hand -->\n<svg></svg>", true},
		{"xml declaration first", "<?xml version=\"1.0\"?>\n<!-- gonum -->\n<svg></svg>", true},
		{"xml declaration not closed", "<?xml version=\"1.0\"\n<svg></svg>", false},
		{"text first", "hello <svg></svg>", false},
		{"markup first", "<b>x</b><svg></svg>", false},
		{"after the svg", "<svg></svg><script>alert(1)</script>", false},
		{"two svgs", "<svg></svg><svg></svg>", false},
		{"not closed", "<svg><g>", false},
		{"script", "<svg><script>alert(1)</script></svg>", false},
		{"event handler", `<svg onload="alert(1)"></svg>`, false},
		{"event handler, odd case", `<svg><g OnMouseOver = "alert(1)"></g></svg>`, false},
		{"foreignObject", `<svg><foreignObject><img src=x></foreignObject></svg>`, false},
		{"link", `<svg><a href="javascript:alert(1)"><text>x</text></a></svg>`, false},
		{"use", `<svg><use href="data:image/svg+xml,..."/></svg>`, false},
		{"animate", `<svg><animate attributeName="href" to="javascript:alert(1)"/></svg>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPage(tc.chart)
			got := render(t, p)
			tags, _ := elements(t, got)
			for _, tag := range []string{"script", "img", "iframe", "foreignobject", "use", "animate"} {
				if tags[tag] {
					t.Errorf("the page has a <%s> element", tag)
				}
			}
			if inlined := tags["svg"]; inlined != tc.inline {
				t.Errorf("chart inlined = %v, want %v", inlined, tc.inline)
			}
			if strings.Contains(got, "<?xml") {
				t.Errorf("the page has the chart's XML declaration")
			}
			c, problem := checkChart(tc.chart)
			if tc.inline != (c != "") || (strings.TrimSpace(string(tc.chart)) != "" && !tc.inline && problem == "") {
				t.Errorf("checkChart = %.40q, %q", c, problem)
			}
		})
	}
	if !strings.Contains(string(evil), "&lt;/svg&gt;&lt;script&gt;") {
		t.Errorf("swings did not escape a hostile lane name in its SVG text")
	}
}

func TestFormat(t *testing.T) {
	v := view{Page: Page{Now: fixedNow, Location: time.UTC}}
	cet := view{Page: Page{Now: fixedNow, Location: time.FixedZone("CET", 3600)}}
	for _, tc := range []struct{ got, want string }{
		{secs(1.25, false, true), "1.2"},
		{secs(12.37, false, true), "12.4"},
		{secs(30, true, false), ">30.0"},
		{secs(0, false, false), "—"},
		{secs(2.5, false, false), "2.5"}, // a failed probe that got that far
		{secs(0, false, true), "0.0"},
		{secs(math.NaN(), false, true), "NaN"},
		{fixed(2.305, false), "2.31"},
		{fixed(0, true), "—"},
		{fixed(0, false), "0.00"},
		{fixed(math.Inf(1), false), "∞"},
		{v.rfc(time.Time{}), "—"},
		{v.rfc(time.Date(2026, 11, 30, 15, 7, 12, 9, time.FixedZone("CET", 3600))), "2026-11-30T14:07:12Z"},
		{cet.rfc(fixedNow), "2026-11-30T15:07:12+01:00"},
		{cet.Clock(at(14, 0)), "15:00"},
		{cet.Clock(at(23, 30)), "12-01 00:30"},
		{compact(45 * time.Second), "45s"},
		{compact(25*time.Minute + 59*time.Second), "25m"},
		{compact(2*time.Hour + 5*time.Minute), "2h05m"},
		{compact(47*time.Hour + 59*time.Minute), "47h59m"},
		{compact(76 * time.Hour), "3d04h"},
		{v.Rel(fixedNow.Add(22*time.Minute + 48*time.Second)), "in 22m"},
		{v.Rel(fixedNow.Add(-3 * time.Minute)), "3m ago"},
		{v.Rel(fixedNow.Add(500 * time.Millisecond)), "now"},
		{v.Clock(at(14, 0)), "14:00"},
		{v.Clock(at(0, 0).Add(-10 * time.Minute)), "11-29 23:50"},
		{v.Clock(time.Date(2025, 11, 30, 14, 0, 0, 0, time.UTC)), "11-30 14:00"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestLaneState(t *testing.T) {
	ok := Probe{Outcome: "ok", OK: true}
	bad := Probe{Outcome: "timeout"}
	for _, tc := range []struct {
		lane Lane
		want string
	}{
		{Lane{Probes: []Probe{ok, bad}}, StateOK},
		{Lane{Probes: []Probe{bad, ok}}, StateFailing},
		{Lane{}, StateIdle},
		{Lane{Probes: []Probe{ok}, Skip: "budget"}, StateSkipped},
		{Lane{Probes: []Probe{bad}, Skip: "quota until 14:30", BackoffUntil: at(14, 30)}, StateBackoff},
	} {
		if got := tc.lane.State(); got != tc.want {
			t.Errorf("%+v: State() = %q, want %q", tc.lane, got, tc.want)
		}
	}
}
