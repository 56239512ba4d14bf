// Package status renders the sampler's status page: per lane its last
// probes, budget and quota state, the policy of the current hour and the
// time-of-day chart, server-rendered with html/template, no external assets.
package status

import (
	"html/template"
	"time"

	"github.com/lanewatch/lanewatch/policy"
)

// Page is everything the status page shows. Strings that came from a lane's
// server (none today beyond outcomes and numbers, but a Detail may follow)
// are escaped by html/template like every other value.
type Page struct {
	Now       time.Time
	Site      string // "" when the sampler has no site
	Shard     string // "2/5", or "" for all lanes
	Schedule  string
	NextRound time.Time // zero when not known (-once)
	Store     string    // "file /var/lib/lanewatch/samples.lp", "influx http://… bucket …"
	Healthy   bool
	Problem   string // why not healthy

	Lanes  []Lane
	Groups []Group

	// Policy is the live policy of the current hour, nil when it could not
	// be computed (PolicyErr says why).
	Policy    *policy.File
	PolicyErr string

	// Chart is the swings chart of the last ChartDays days as an inline
	// SVG document (trusted: rendered by package swings), empty when there
	// is no data.
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
	Skip           string    // why the next round would skip it ("budget", "quota until 14:00Z"), "" when it probes
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
