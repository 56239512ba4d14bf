// Package configs embeds the policy file's JSON Schema, so that the code
// checks policy files against the very schema it ships; the example
// configs beside it are data only.
package configs

import _ "embed"

// PolicySchema is policy.schema.json: the shape of policies/<hour>.yaml.
//
//go:embed policy.schema.json
var PolicySchema []byte
