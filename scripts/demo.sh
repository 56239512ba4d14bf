#!/usr/bin/env bash
# demo.sh — what `make demo` runs: two stand-in lanes (cmd/lanesim) on free
# loopback ports, three sampler rounds into the embedded store, what was
# stored, and the policy for the current hour. Everything stays in .demo/.
set -euo pipefail
cd "$(dirname "$0")/.."

demo=.demo
rm -rf "$demo"
mkdir -p "$demo"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# start_lane NAME ARGS...: start lanesim, wait for its address file.
start_lane() {
	local name=$1; shift
	bin/lanesim -listen 127.0.0.1:0 -addr-file "$demo/$name.addr" "$@" >"$demo/$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 100); do
		[[ -s "$demo/$name.addr" ]] && return 0
		sleep 0.1
	done
	echo "demo: lanesim $name did not start; its log:" >&2
	cat "$demo/$name.log" >&2
	exit 1
}

# The free lane: two generation slots shared with a steady background load,
# so its queue comes from contention. The paid lane: plenty of slots.
start_lane free -slots 2 -prefill 200ms -token-interval 40ms -tokens 12 \
	-background 40 -background-hold 2500ms -seed 7
start_lane paid -slots 16 -prefill 150ms -token-interval 10ms -tokens 12 -seed 8
free_url=$(cat "$demo/free.addr")
paid_url=$(cat "$demo/paid.addr")
echo "demo: free lane at $free_url, paid lane at $paid_url"

sed -e "s#http://127.0.0.1:18080#$free_url#" -e "s#http://127.0.0.1:18081#$paid_url#" \
	configs/demo.yaml >"$demo/demo.yaml"
export LANEWATCH_DEMO_KEY=demo-key-not-a-secret

for round in 1 2 3; do
	echo
	echo "== sampler round $round"
	bin/sampler -config "$demo/demo.yaml" -once
	sleep 1
done

echo
echo "== stored in $demo/samples.lp (line protocol; later lines replace earlier ones)"
cat "$demo/samples.lp"

echo
echo "== policy for the current hour"
bin/policygen -config "$demo/demo.yaml" -print

echo
echo "== backtest: 28 days of generated history (lanesim history), the policy replayed against them, beside the baselines people write (fallback@T: free with a first-token timeout, then paid)"
# Three lanes that are never probed here: the history stands in for a month
# of sampler rounds. The store path is relative to the config's folder.
cat >"$demo/history.yaml" <<'YAML'
timezone: UTC
store:
  kind: file
  path: history.lp
lanes:
  - {name: free, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: sim-free}
  - {name: free2, kind: free, api: openai, base_url: "http://127.0.0.1:1/v1", model: sim-free}
  - {name: paid, kind: paid, api: openai, base_url: "http://127.0.0.1:1/v1", model: sim-paid}
policy:
  out: policies-history
  lookback_days: 7
  classes:
    - {name: interactive, deadline_s: 60, ceiling_tokens: 4000, est_tokens: 800, paid_usd_per_1k: 0.002}
    - {name: batch, deadline_s: 900, ceiling_tokens: 20000, est_tokens: 4000, paid_usd_per_1k: 0.001}
YAML
bin/lanesim history -days 28 -seed 1 -config "$demo/history.yaml"
bin/policygen backtest -config "$demo/history.yaml" -days 28 -lookback 1,3,7,14 -fallback 10,20,30
