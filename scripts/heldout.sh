#!/usr/bin/env bash
# heldout.sh — lanewatch's decisions on worlds none of its constants was
# chosen on (issue 30): every held-out family of `lanesim history`
# (lanesim.HeldOutProfiles), seeds 201-203, one free lane and a paid lane,
# the interactive class (800 tokens, 0.002 USD/1k) replayed at 30, 60 and
# 120 s against fallback@T (T 1-105 s) and the tuned baselines, 42 days
# scored after 28 of history. `make heldout` runs it; BENCHMARKS.md
# publishes its table ("Decisions on worlds they were not tuned on"), a
# Markdown table (scripts/heldout.jq).
#
#   scripts/heldout.sh [DIR]    # DIR keeps the histories (default .demo/heldout)
#
# PROFILES (default: every held-out family) and SEEDS (default 201 202
# 203) narrow it; BIN names the folder holding lanesim and policygen
# (default bin); jq is needed. Deterministic: the same tree prints the
# same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${BIN:-bin}
dir=${1:-.demo/heldout}
profiles=${PROFILES:-known-flat known-peak weekly drop rise mixture pareto sparse upstream}
seeds=${SEEDS:-201 202 203}
command -v jq >/dev/null || { echo "heldout: missing tool: jq (install: apt-get install jq)" >&2; exit 1; }
mkdir -p "$dir"

runs="$dir/runs.jsonl"
: >"$runs"
for profile in $profiles; do
	for seed in $seeds; do
		name=$profile-$seed
		quota="" lanequota=""
		if [[ $profile == sparse ]]; then # its free lane is probed under a budget: the policy keeps a basis between probes
			quota=$'quotas:\n  - {name: budget, probes_per_day: 8}\n'
			lanequota=", quota: budget"
		fi
		cat >"$dir/$name.yaml" <<YAML
timezone: UTC
store: {kind: file, path: $name.lp}
${quota}lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: sim-free$lanequota}
  - {name: paid, kind: paid, api: openai, base_url: "http://127.0.0.1:1/v1", model: sim-paid}
policy:
  out: policies-$name
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
YAML
		rm -f "$dir/$name.lp"
		"$bin/lanesim" history -days 71 -start 2026-09-01 -seed "$seed" -profile "$profile" -paid-faults \
			-config "$dir/$name.yaml" >/dev/null
		"$bin/policygen" backtest -config "$dir/$name.yaml" -days 42 -end 2026-11-11T00 \
			-fallback 1,2,3,5,7.5,10,15,20,25,30,35,40,45,50,55,60,75,90,105 -deadlines 30,60,120 -tune 14 \
			-format json | jq -c --arg p "$profile" --argjson s "$seed" '{profile: $p, seed: $s, report: .}' >>"$runs"
	done
done
jq -nr -f scripts/heldout.jq "$runs"
