package page

import (
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lanewatch/lanewatch/store"
)

//go:embed templates/*.html.tmpl
var templateFS embed.FS

var page = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"rfc":   func(time.Time) string { panic("rfc is the page's own (Render)") },
	"secs":  secs,
	"fixed": fixed,
	"join":  func(s []string) string { return strings.Join(s, ", ") },
	// share is a part of n, for a meter's low and high marks.
	"share":      func(n int, f float64) string { return strconv.FormatFloat(float64(n)*f, 'f', -1, 64) },
	"stateClass": func(state string) string { return cmp.Or(stateClass[state], "muted") },
}).ParseFS(templateFS, "templates/*.html.tmpl"))

// stateClass is the CSS class of a lane state's badge.
var stateClass = map[string]string{StateOK: "ok", StateFailing: "bad", StateBackoff: "warn", StateSkipped: "warn"}

// Render writes p as a complete HTML document, as it goes (Handler renders
// into a buffer). Every value is escaped but p.Chart, once checkChart
// accepts it.
func Render(w io.Writer, p Page) error {
	v := view{Page: p}
	v.Location = store.OrUTC(p.Location)
	v.ChartSVG, v.ChartProblem = checkChart(p.Chart)
	t := template.Must(page.Clone()).Funcs(template.FuncMap{"rfc": v.rfc})
	if err := t.Execute(w, v); err != nil {
		return fmt.Errorf("status page: %w", err)
	}
	return nil
}

// view is what the template sees: the page plus what is derived from it.
type view struct {
	Page
	ChartSVG     template.HTML // the chart to show inline, "" when none or left out
	ChartProblem string        // why a non-empty chart was left out
}

// moment is a time to show with how far it is from the page's time.
type moment struct {
	T   time.Time
	Rel string // "in 25m", "3m ago", "now"
}

// At is t with how far it is from the page's time.
func (v view) At(t time.Time) moment { return moment{T: t, Rel: v.Rel(t)} }

// Rel is t relative to the page's time: "in 25m", "3m ago" or "now".
func (v view) Rel(t time.Time) string {
	d := t.Sub(v.Now)
	switch {
	case d >= time.Second:
		return "in " + compact(d)
	case d <= -time.Second:
		return compact(-d) + " ago"
	}
	return "now"
}

// Clock is a probe's time in a table cell: HH:MM in the page's zone, with
// the date (MM-DD) in front when it is not the page's day.
func (v view) Clock(t time.Time) string {
	t, now := t.In(v.Location), v.Now.In(v.Location)
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04")
	}
	return t.Format("01-02 15:04")
}

// rfc is t in the page's zone to the second, with its offset; "—" for
// the zero time.
func (v view) rfc(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(v.Location).Format(time.RFC3339)
}

// compact is a duration to the minute (to the second under a minute):
// "45s", "25m", "2h05m", "3d04h".
func compact(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// secs is a probe's queue_s or gen_s: one decimal, ">30.0" for a lower
// bound (a censored wait), "—" for a failed probe that has no value.
func secs(v float64, censored, ok bool) string {
	switch {
	case censored:
		return ">" + strconv.FormatFloat(v, 'f', 1, 64)
	case !ok && v == 0:
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// fixed is a policy figure with two decimals (the policy rounds to 0.01),
// "—" for zero when zero means "no data" (tok_per_s).
func fixed(v float64, zeroIsNone bool) string {
	if zeroIsNone && v == 0 {
		return "—"
	}
	if math.IsInf(v, 1) {
		return "∞"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// unsafeChart matches what a swings chart never holds and what could run
// code or leave the <svg> element.
var unsafeChart = regexp.MustCompile(`(?i)<\s*/?\s*(script|foreignobject|iframe|object|embed|a|use|image|animate|set|handler|listener)\b|\son[a-z]+\s*=|javascript:`)

// checkChart returns the chart to inline, or why it is left out: a second
// line behind the trust in it, not a sanitizer. It accepts one <svg>
// element, after an XML declaration and comments (dropped), with nothing
// after it and nothing in it that scripts, embeds or links.
func checkChart(c template.HTML) (template.HTML, string) {
	s := strings.TrimSpace(string(c))
	if s == "" {
		return "", ""
	}
	lower := strings.ToLower(s)
	switch {
	case strings.Count(lower, "<svg") != 1 || strings.Count(lower, "</svg") != 1 || !strings.HasSuffix(lower, "</svg>"):
		return "", "the chart is not one SVG element"
	case !onlyComments(lower[:strings.Index(lower, "<svg")]):
		return "", "the chart has something before its SVG element"
	case unsafeChart.MatchString(s):
		return "", "the chart holds markup a chart never needs"
	}
	return template.HTML(s[strings.Index(lower, "<svg"):]), ""
}

// onlyComments reports whether s is whitespace, <!-- comments --> and
// <?xml declarations?> only.
func onlyComments(s string) bool {
	for {
		s = strings.TrimSpace(s)
		if s == "" {
			return true
		}
		start, stop := "<!--", "-->"
		if strings.HasPrefix(s, "<?xml") {
			start, stop = "<?xml", "?>"
		}
		if !strings.HasPrefix(s, start) {
			return false
		}
		end := strings.Index(s, stop)
		if end < 0 {
			return false
		}
		s = s[end+len(stop):]
	}
}
