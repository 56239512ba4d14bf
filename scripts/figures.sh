#!/usr/bin/env bash
# figures.sh — every backtest figure the README quotes, from one command:
# `make figures` runs it, `make demo` ends with it, and scripts' figures
# test holds the README's quotes to its output (they cannot drift).
#
#   scripts/figures.sh [DIR]    # DIR keeps the histories (default .demo/figures)
#
# Six generated histories (lanesim history: the harsh and the mild profile,
# seeds 1 to 3, the paid lane's rare faults on), 57 days each ending
# 2026-11-29T00Z so that the 28 scored days have every lookback's warm-up,
# on the demo's lanes and classes. It prints the whole backtest of the first
# (harsh, seed 1), then the grid of the six against the fallback@T
# baselines (scripts/figures.jq). BIN names the folder holding lanesim and
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

window=(-days 28 -end 2026-11-29T00)
runs="$dir/runs.jsonl"
: >"$runs"
for profile in harsh mild; do
	for seed in 1 2 3; do
		name=history-$profile-$seed
		history "$name"
		"$bin/lanesim" history -days 57 -start 2026-10-03 -seed "$seed" -profile "$profile" -paid-faults \
			-config "$dir/$name.yaml" >/dev/null
		if [[ $profile$seed == harsh1 ]]; then
			echo "== backtest: 28 days of generated history (lanesim history -profile harsh -seed 1 -paid-faults), the policy replayed against them, beside the baselines people write (fallback@T: free with a first-token timeout, then paid)"
			"$bin/policygen" backtest -config "$dir/$name.yaml" "${window[@]}" -lookback 1,3,7,14 -fallback 10,20,30
		fi
		"$bin/policygen" backtest -config "$dir/$name.yaml" "${window[@]}" -fallback 5,10,20,30,45 \
			-deadlines 30,60,120 -format json | jq -c --arg p "$profile" --argjson s "$seed" \
			'{profile: $p, seed: $s, baselines: .baselines}' >>"$runs"
	done
done

echo
echo "== the grid: lanewatch against fallback@T on six histories (harsh and mild, seeds 1-3), each class at 30, 60 and 120 s and its own deadline"
jq -nr -f scripts/figures.jq "$runs"
