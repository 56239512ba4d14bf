// Package interop holds tests that run lanewatch against servers nobody on
// the project wrote. The servers come from npm, pinned in package.json and
// package-lock.json beside this file; install them with
//
//	npm ci --prefix interop
//
// Without node_modules the tests skip, except under CI=true, where they fail.
package interop
