// Package redact holds lanewatch's one rule for printing a URL that may
// carry credentials.
package redact

import "net/url"

// URL returns raw without user info, query, fragment or an opaque part
// ("https:user:pw@host"), or "(unparsable URL)".
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment, u.Opaque = nil, "", "", ""
	return u.String()
}
