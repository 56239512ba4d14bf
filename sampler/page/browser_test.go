package page

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/lanewatch/lanewatch/internal/missingtool"
)

// chromium is Debian's Chromium, which .ci/run installs.
const chromium = "/usr/bin/chromium"

// screenshotPath is the README's screenshot, written by -update.
var screenshotPath = filepath.Join("..", "..", "docs", "status.png")

// consoleLog collects what the page says on its console: console API
// calls, uncaught exceptions and browser log entries (a CSP violation, a
// failed load).
type consoleLog struct {
	mu   sync.Mutex
	msgs []string
}

func (c *consoleLog) listen(ev any) {
	var m string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range ev.Args {
			args = append(args, string(a.Value)+a.Description)
		}
		m = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
	case *runtime.EventExceptionThrown:
		m = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			m += " " + ev.ExceptionDetails.Exception.Description
		}
	case *log.EventEntryAdded:
		m = fmt.Sprintf("log %s/%s: %s %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
	default:
		return
	}
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
}

func (c *consoleLog) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// browser starts headless Debian Chromium with the flags this machine's
// closed network needs and a fresh profile, and returns a chromedp context
// whose console the returned log collects. It skips the test when Chromium
// is absent, unless CI is set.
func browser(t *testing.T) (context.Context, *consoleLog) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		missingtool.Skip(t, "chromium", "apt-get install chromium", fmt.Sprintf("%v; the status page is not run in a browser", err))
	}
	profile := t.TempDir() // removed after the browser has exited (cleanups run last-in first-out)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(profile),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	cl := &consoleLog{}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(cl.listen))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // start the browser outside any timeout
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return ctx, cl
}

// layoutReport is what the page's own layout says at one viewport.
type layoutReport struct {
	ScrollWidth float64  `json:"scrollWidth"`
	ClientWidth float64  `json:"clientWidth"`
	Overflowing []string `json:"overflowing"` // elements past the right edge outside a scroll box
	SVGWidth    float64  `json:"svgWidth"`
	SVGHeight   float64  `json:"svgHeight"`
	Lanes       []string `json:"lanes"` // the visible text of the lane headings
}

const layoutJS = `(() => {
	const de = document.documentElement, w = de.clientWidth;
	const inScroll = el => { for (let p = el.parentElement; p; p = p.parentElement) { if (p.classList.contains('scroll')) return true; } return false; };
	const overflowing = [];
	for (const el of document.body.querySelectorAll('*')) {
		const r = el.getBoundingClientRect();
		if (r.width > 0 && r.right > w + 0.5 && !inScroll(el)) overflowing.push(el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className : '') + ' right=' + Math.round(r.right));
	}
	const svg = document.querySelector('#chart ~ figure svg');
	const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
	return {
		scrollWidth: de.scrollWidth, clientWidth: w, overflowing: overflowing.slice(0, 10),
		svgWidth: box.width, svgHeight: box.height,
		lanes: [...document.querySelectorAll('article.lane h3')].map(h => h.innerText),
	};
})()`

// TestBrowser opens the page in headless Chromium over real HTTP, at a
// phone's and at a desktop's width, and checks that it shows every lane and
// the chart, fits the phone's width, and says nothing on the console. With
// -update it writes the README's screenshot.
func TestBrowser(t *testing.T) {
	ctx, cl := browser(t)
	p := testPage(swingsChart(t, "groq-llama", "gemini-flash", "openai-mini"))
	srv := httptest.NewServer(Handler(func(context.Context) Page { return p }))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()

	for _, vp := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{
		{"phone", 390, 844, true},
		{"desktop", 1200, 900, false},
	} {
		t.Run(vp.name, func(t *testing.T) {
			emulate := chromedp.EmulateViewport(vp.width, vp.height)
			if vp.mobile {
				emulate = chromedp.EmulateViewport(vp.width, vp.height, chromedp.EmulateScale(3), chromedp.EmulateMobile)
			}
			if err := chromedp.Do(ctx, emulate, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("footer"))); err != nil {
				t.Fatal(err)
			}
			text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range p.Lanes {
				if !strings.Contains(text, l.Name) {
					t.Errorf("lane %q is not in the page's visible text", l.Name)
				}
			}
			for _, want := range []string{">30.0", "quota until 14:30", "rate_limited (HTTP 429)", "backing off", "interactive", "batch", "healthy"} {
				if !strings.Contains(text, want) {
					t.Errorf("the page's visible text lacks %q", want)
				}
			}
			lay, err := chromedp.Run(ctx, chromedp.Evaluate[layoutReport](layoutJS))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, l := range p.Lanes {
				names = append(names, l.Name)
			}
			if strings.Join(lay.Lanes, ",") != strings.Join(names, ",") {
				t.Errorf("lane headings = %q, want %q", lay.Lanes, names)
			}
			if lay.SVGWidth <= 0 || lay.SVGHeight <= 0 {
				t.Errorf("chart <svg> box = %gx%g, want a non-zero box", lay.SVGWidth, lay.SVGHeight)
			}
			if lay.ClientWidth != float64(vp.width) {
				t.Errorf("layout width = %g, want the viewport's %d (is the viewport meta there?)", lay.ClientWidth, vp.width)
			}
			if lay.ScrollWidth > lay.ClientWidth || len(lay.Overflowing) > 0 {
				t.Errorf("page overflows horizontally at %dpx: scrollWidth %g > %g; outside scroll boxes: %q",
					vp.width, lay.ScrollWidth, lay.ClientWidth, lay.Overflowing)
			}
			if dir := os.Getenv("STATUS_SHOTS"); dir != "" { // look at both widths while working on the page
				png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, vp.name+".png"), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if *update && vp.name == "desktop" {
				png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(screenshotPath, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s (%d bytes)", screenshotPath, len(png))
			}
		})
	}
	if msgs := cl.all(); len(msgs) > 0 {
		t.Errorf("the page wrote %d console messages, want none:\n%s", len(msgs), strings.Join(msgs, "\n"))
	}
}
