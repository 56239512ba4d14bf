// Package examples runs the API's client examples, examples/typescript
// (the official openai and @anthropic-ai/sdk SDKs, from its own lockfile)
// and examples/python (the standard library only), with the commands of
// README.md's marked blocks as written, against stand-in lanes (lanesim)
// speaking both dialects and the real API handler. Without node, npm, the
// example's npm packages (npm ci in examples/typescript) or python3 the
// tests skip, except under CI=true, where they fail.
package examples
