#!/usr/bin/env bash
# demo.sh — what `make demo` runs: two stand-in lanes (cmd/lanesim) on free
# loopback ports, three sampler rounds into the embedded store, the policy
# file they wrote for the current hour, the lane a CI job would take, and
# the next steps. Everything stays in .demo/.
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
	echo "== sampler round $round: probe each lane, store the probes, write this hour's policy file (and the next hour's forecast)"
	bin/sampler -config "$demo/demo.yaml" -once
	sleep 1
done

hour_file=$(ls "$demo"/policies/*.yaml | head -n 1)
echo
echo "== $hour_file: this hour's policy, as the rounds wrote it (docs/policy.md explains each key)"
cat "$hour_file"

echo
echo "== the lane a job of class interactive starts on now, as a CI step asks for it"
bin/policygen lane -config "$demo/demo.yaml" -class interactive -format env

cat <<EOF

== next: your own lanes
  mkdir -p my && cp examples/lanewatch.yaml my/   # set its lanes and keys (docs/config.md); it stores in data/, writes policies/
  bin/sampler -config my/lanewatch.yaml -once      # one round now: is every lane ok?
  bin/sampler -config my/lanewatch.yaml -listen 127.0.0.1:9464   # the daemon: a round at each tick of its schedule
  xdg-open http://127.0.0.1:9464/                  # its status page; /metrics and /api/v1/policy beside it
  bin/policygen lane -config my/lanewatch.yaml -class interactive   # in CI (docs/deploy.md, docs/ci/)
The stored probes are in $demo/samples.lp; the README's backtest figures: make figures (docs/backtest.md).
EOF
