#!/usr/bin/env bash
# figures.sh — every backtest figure the README quotes, from one command:
# `make figures` runs it, and scripts' figures test holds the README's
# quotes to its output (they cannot drift).
#
#   scripts/figures.sh [DIR]    # DIR keeps the histories (default .demo/figures)
#
# First one generated history (lanesim history: the harsh profile, seed 1,
# the paid lane's rare faults on), 57 days ending 2026-11-29T00Z so that
# the 28 scored days have every lookback's warm-up, lanes free, free2 and
# paid, classes interactive and batch, and its whole backtest. Then the decisions against the
# baselines people write (scripts/heldout.sh): on the worlds lanewatch's
# constants are chosen on (harsh and mild, seeds 1-3), and on the held-out
# families (seeds 201-203). BIN names the folder holding lanesim and
# policygen (default bin); jq is needed. Deterministic: the same tree
# prints the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${BIN:-bin}
dir=${1:-.demo/figures}
command -v jq >/dev/null || { echo "figures: missing tool: jq (install: apt-get install jq)" >&2; exit 1; }
mkdir -p "$dir"

# history NAME: the demo's lanes and classes over the store NAME.lp.
history() {
	cat >"$dir/$1.yaml" <<YAML
timezone: UTC
store:
  kind: file
  path: $1.lp
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: sim-free}
  - {name: free2, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: sim-free}
  - {name: paid, kind: paid, api: openai, base_url: "http://127.0.0.1:1/v1", model: sim-paid}
policy:
  out: policies-$1
  lookback_days: 7
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
    - {name: batch, deadline_s: 900, ceiling_tokens: 20000, est_tokens: 4000, paid_usd_per_1k: 0.001}
YAML
	rm -f "$dir/$1.lp"
}

name=history-harsh-1
history "$name"
"$bin/lanesim" history -days 57 -start 2026-10-03 -seed 1 -profile harsh -paid-faults -config "$dir/$name.yaml" >/dev/null
echo "== backtest: 28 days of generated history (lanesim history -profile harsh -seed 1 -paid-faults), the policy replayed against them, beside the baselines people write (fallback@T: free with a first-token timeout, then paid)"
"$bin/policygen" backtest -config "$dir/$name.yaml" -days 28 -end 2026-11-29T00 -lookback 1,3,7,14 -fallback 10,20,30

echo
echo "== decisions on the worlds the constants are chosen on (harsh, mild): lanewatch against fallback@T and the tuned T, interactive at 30, 60 and 120 s"
PROFILES="harsh mild" SEEDS="1 2 3" BIN=$bin scripts/heldout.sh "$dir/dev"
echo
echo "== decisions on worlds they were not tuned on (the held-out families), the same runs"
BIN=$bin scripts/heldout.sh "$dir/heldout"
