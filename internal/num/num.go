// Package num holds the numeric predicates the packages share. It depends
// on nothing but math, so the pure packages (policy) may use it.
package num

import "math"

// Finite reports whether x is neither NaN nor ±Inf.
func Finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
