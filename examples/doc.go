// Package examples runs the API's client examples, examples/typescript
// (the official openai npm SDK, compiled with typescript from interop's
// lockfile) and examples/python (the standard library only), against
// stand-in lanes (lanesim) and the real API handler. Without node, the npm
// packages or python3 the tests skip, except under CI=true, where they fail.
package examples
