package store

import "errors"

// Booked returns nil when a Write that returned err left every point it
// was given durable: stored, spooled, or (a Spool's *RefusedError naming
// its dead-letter file) refused and kept in the dead-letter file, which
// reads merge. A sampler writes its reservations so and probes only when
// Booked is nil: a request counts from the moment it was booked, wherever
// the booking is kept. Any other error is returned as is.
func Booked(err error) error {
	var re *RefusedError
	if err == nil || (errors.As(err, &re) && re == err && re.DeadLetter != "") {
		return nil
	}
	return err
}
