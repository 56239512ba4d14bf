package swings

import (
	"slices"

	"github.com/lanewatch/lanewatch/store"
)

// Build returns the report of the records (any order): each lane's figures
// merge every site's records (MergeSites), opt.Lanes are listed even
// without data and, with perSite and records of a lane from more than one
// site, each listed lane is followed by one column per site, named
// lane@site ("lane@-" for the untagged site).
func Build(recs []store.Hourly, opt Options, perSite bool) *Report {
	s := NewSites(opt, perSite)
	if s.Add(recs) {
		if rep, ok := s.Finish(); ok {
			return rep
		}
	}
	sitesOf := map[string][]string{}
	for _, h := range recs {
		if !slices.Contains(sitesOf[h.Lane], h.Site) {
			sitesOf[h.Lane] = append(sitesOf[h.Lane], h.Site)
		}
	}
	var columns bool
	opt.Lanes, columns = listed(opt.Lanes, sitesOf, perSite)
	all := recs
	if columns { // the records again under their lane@site names
		all = slices.Clone(recs)
		for _, h := range recs {
			h.Lane = siteLane(h.Lane, h.Site)
			all = append(all, h)
		}
	}
	return Compute(MergeSites(all), opt)
}

// listed returns lanes, each followed by its lane@site columns when
// perSite and some lane of the records (sitesOf: the sites of each) has
// more than one site, and whether the report has those columns.
func listed(lanes []Lane, sitesOf map[string][]string, perSite bool) ([]Lane, bool) {
	multi := false
	for _, ss := range sitesOf {
		multi = multi || len(ss) > 1
	}
	if !perSite || !multi {
		return lanes, false
	}
	var out []Lane
	for _, l := range lanes {
		out = append(out, l)
		ss := slices.Clone(sitesOf[l.Name])
		slices.Sort(ss)
		for _, site := range ss {
			out = append(out, Lane{Name: siteLane(l.Name, site), Kind: l.Kind})
		}
	}
	return out, true
}

// siteLane names a lane's column for one site: lane@site ("lane@-" for the
// untagged site).
func siteLane(lane, site string) string {
	if site == "" {
		site = "-"
	}
	return lane + "@" + site
}
