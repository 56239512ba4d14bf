// Package page renders the sampler's status page, whose contents
// docs/deploy.md describes ("The status page and the swings report").
package page

import (
	"html/template"
	"time"

	"github.com/lanewatch/lanewatch/policy"
)

// Page is everything the status page shows.
type Page struct {
	Now       time.Time
	Location  *time.Location // the config's zone: every time is shown in it (nil: UTC)
	Site      string         // "" when the sampler has no site
	Shard     string         // "2/5", or "" for all lanes
	Schedule  string
	NextRound time.Time // zero when not known (-once)
	Store     string    // "file /var/lib/lanewatch/samples.lp", "influx http://… bucket …"
	Healthy   bool
	Problem   string // why not healthy

	Lanes  []Lane
	Groups []Group

	// Policy is the current hour's policy file, read from PolicyPath,
	// written at PolicyWritten; nil: PolicyErr says why, how to get one.
	Policy        *policy.File
	PolicyPath    string
	PolicyWritten time.Time
	PolicyErr     string

	// Chart is the swings chart of the last ChartDays days as an inline
	// SVG document, empty when there is no data: the one value the page
	// does not escape. Package swings draws it from numbers and names the
	// config limits to [a-z0-9_-], escaping every text; checkChart checks it.
	Chart     template.HTML
	ChartDays int
}

// Lane is one lane's state.
type Lane struct {
	Name  string
	Kind  string
	Quota string // quota group, "" for none

	Probes []Probe // newest first

	QuotaKnown     bool
	QuotaRemaining int64
	QuotaReset     time.Time // zero when unknown
	BackoffUntil   time.Time // zero when the lane does not back off
	Skip           string    // why the next round would skip it ("budget", "quota until 14:00"), "" when it probes
	Why            string    // why the newest probe failed ("http_error (HTTP 401): …"), "" when it did not
}

// Probe is one stored probe of a lane.
type Probe struct {
	Time     time.Time
	Outcome  string
	OK       bool
	QueueS   float64
	Censored bool // QueueS is a lower bound (timed out before the first token)
	GenS     float64
}

// Group is one quota group's budget today.
type Group struct {
	Name     string
	PerDay   int
	Spent    int
	Left     int
	Timezone string
}

// Lane states, as Lane.State returns them.
const (
	StateOK      = "ok"          // the newest probe was ok
	StateFailing = "failing"     // the newest probe failed
	StateBackoff = "backing off" // the lane waits out a 429 or a spent quota
	StateSkipped = "skipped"     // the next round leaves it out (budget, store)
	StateIdle    = "no probes"   // no probe stored in the last day
)

// State sums the lane up in one word: a back-off first, then a skip, then
// its newest probe.
func (l Lane) State() string {
	switch {
	case !l.BackoffUntil.IsZero():
		return StateBackoff
	case l.Skip != "":
		return StateSkipped
	case len(l.Probes) == 0:
		return StateIdle
	case !l.Probes[0].OK:
		return StateFailing
	}
	return StateOK
}

// GroupLanes returns the names of the page's lanes in the quota group, in
// page order.
func (p Page) GroupLanes(group string) []string {
	var names []string
	for _, l := range p.Lanes {
		if l.Quota == group {
			names = append(names, l.Name)
		}
	}
	return names
}
