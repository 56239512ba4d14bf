#!/usr/bin/env bash
# demo.sh — what `make demo` runs: two stand-in lanes (cmd/lanesim) on free
# loopback ports, three sampler rounds into the embedded store, what was
# stored, the policy for the current hour, and the README's backtest
# figures (scripts/figures.sh). Everything stays in .demo/.
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
	examples/demo.yaml >"$demo/demo.yaml"
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

# The backtest figures the README quotes, from the one command that makes
# them (make figures): six generated histories, the first one's whole
# backtest, then the grid against the fallback@T baselines.
echo
scripts/figures.sh "$demo/figures"
