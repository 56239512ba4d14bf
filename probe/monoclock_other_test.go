//go:build !linux

package probe

import "time"

// monoNs is 0: no clock shared with other processes here.
func monoNs(time.Time) int64 { return 0 }
