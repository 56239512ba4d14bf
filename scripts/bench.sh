#!/usr/bin/env bash
# bench.sh — what `make bench` runs.
#
#  1. sampler peak RSS: one `sampler -once` round of 50 lanes against a local
#     lanesim (plenty of slots), under GNU time; the embedded file store, and
#     InfluxDB 1.8 when scripts/influxd.sh can run one. Target: < 30 MiB.
#  2. sampler daemon: the same 50 lanes on "@every 1s" for BENCH_DAEMON_ROUNDS
#     rounds (default 20), RSS and goroutines from its own /metrics.
#  3. the repo's Go benchmarks (probe, series, policy, cmd/policygen), with
#     the InfluxDB ones against that server.
#
# Environment: BENCH_RUNS (sampler -once runs per store, default 5),
# BENCH_DAEMON_ROUNDS (default 20), BENCH_GO=0 to skip the Go benchmarks,
# BENCH_FLAGS (extra `go test` flags, e.g. -benchtime=3x), BENCH_TARGET_MIB
# (default 30). Exit 1 when a peak RSS is over the target.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${BENCH_RUNS:-5}"
daemon_rounds="${BENCH_DAEMON_ROUNDS:-20}"
target_mib="${BENCH_TARGET_MIB:-30}"
lanes=50

die() { echo "bench.sh: $*" >&2; exit 1; }

# GNU time: "Maximum resident set size" comes from its -v report.
if ! /usr/bin/time -v true >/dev/null 2>&1; then
	echo "bench.sh: GNU time (/usr/bin/time -v) is missing; installing the Debian package 'time'"
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		apt-get update -qq && apt-get install -y -qq time >/dev/null
	fi
	/usr/bin/time -v true >/dev/null 2>&1 || die "could not install GNU time; install it (apt-get install time) and rerun"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/lanewatch-bench.XXXXXX")
pids=()
influx_started=0
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ $influx_started == 1 ]]; then scripts/influxd.sh stop >/dev/null 2>&1 || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "== machine: $(nproc) cores, $(go version | cut -d' ' -f3-), $(uname -sr)"
echo "== go build -o $work/bin/ ./cmd/..."
go build -o "$work/bin/" ./cmd/...

# A lanesim with a slot for every lane: the round measures the sampler, not a queue.
"$work/bin/lanesim" -listen 127.0.0.1:0 -addr-file "$work/lanesim.addr" -slots 64 \
	-prefill 50ms -token-interval 10ms -tokens 16 -seed 1 >"$work/lanesim.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do [[ -s "$work/lanesim.addr" ]] && break; sleep 0.1; done
[[ -s "$work/lanesim.addr" ]] || { cat "$work/lanesim.log" >&2; die "lanesim did not start"; }
sim=$(cat "$work/lanesim.addr")

# InfluxDB 1.8 for the influx store and the series benchmarks, if it can run.
influx_url="${INFLUX_URL:-}"
if [[ -z "$influx_url" ]]; then
	export LANEWATCH_INFLUXD_STATE="$work/influxd"
	if scripts/influxd.sh build >/dev/null 2>&1 && out=$(scripts/influxd.sh start 2>&1); then
		influx_started=1
		influx_url=$(grep '^INFLUX_URL=' <<<"$out" | cut -d= -f2-)
	else
		echo "bench.sh: no InfluxDB (scripts/influxd.sh failed); skipping the influx store figures"
	fi
fi

# config STORE_YAML SCHEDULE: 50 lanes, half openai half anthropic, keys from BENCH_KEY.
config() {
	local f="$work/lanewatch-$RANDOM.yaml" i api url
	{
		echo "timezone: UTC"
		echo "schedule: \"$2\""
		echo "jitter: 0s"
		echo "concurrency: 16"
		echo "store:"
		echo "$1"
		echo "probe: {max_tokens: 16, timeout: 30s}"
		echo "lanes:"
		for i in $(seq -w 1 "$lanes"); do
			if ((10#$i % 2)); then api=openai url="$sim/v1"; else api=anthropic url="$sim"; fi
			echo "  - {name: lane-$i, kind: free, api: $api, base_url: \"$url\", model: sim, api_key_env: BENCH_KEY}"
		done
		echo "policy: {out: $work/policies}"
	} >"$f"
	echo "$f"
}
export BENCH_KEY=bench-key-not-a-secret

# peak CONFIG LABEL: run sampler -once $runs times under GNU time.
over=0
peak() {
	local cfg=$1 label=$2 i kb rss=() wall=()
	for i in $(seq 1 "$runs"); do
		/usr/bin/time -v -o "$work/time.txt" "$work/bin/sampler" -config "$cfg" -once >"$work/once.txt" 2>"$work/once.err" ||
			{ cat "$work/once.err" >&2; die "sampler -once failed ($label)"; }
		[[ $(grep -c ' ok ' "$work/once.txt") -eq $lanes ]] || { cat "$work/once.txt" >&2; die "not every lane was ok ($label)"; }
		kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
		rss+=("$kb")
		wall+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time.txt")")
	done
	local sorted max_kb med_kb
	sorted=$(printf '%s\n' "${rss[@]}" | sort -n)
	max_kb=$(tail -n1 <<<"$sorted")
	med_kb=$(sed -n "$(((runs + 1) / 2))p" <<<"$sorted")
	printf '%-32s peak RSS over %d runs: median %.1f MiB, max %.1f MiB (KiB: %s); wall: %s\n' \
		"sampler -once, $lanes lanes, $label:" "$runs" "$(awk "BEGIN{print $med_kb/1024}")" "$(awk "BEGIN{print $max_kb/1024}")" \
		"$(tr '\n' ' ' <<<"$sorted" | sed 's/ $//')" "${wall[*]}"
	if ((max_kb > target_mib * 1024)); then
		echo "bench.sh: $label: peak RSS $((max_kb / 1024)) MiB is over the $target_mib MiB target" >&2
		over=1
	fi
}

echo
echo "== sampler -once peak RSS (/usr/bin/time -v, Maximum resident set size); target < $target_mib MiB"
peak "$(config "  kind: file
  path: $work/samples.lp" "@every 1s")" "file store"
if [[ -n "$influx_url" ]]; then
	curl -fsS -XPOST "$influx_url/query" --data-urlencode "q=CREATE DATABASE lanewatch_bench" >/dev/null
	peak "$(config "  kind: influx
  url: $influx_url
  bucket: lanewatch_bench/autogen
  spool: $work/spool.lp" "@every 1s")" "influx store"
fi

echo
echo "== sampler daemon, $lanes lanes, @every 1s, $daemon_rounds rounds (RSS and goroutines from /metrics)"
dcfg=$(config "  kind: file
  path: $work/daemon.lp" "@every 1s")
"$work/bin/sampler" -config "$dcfg" -listen 127.0.0.1:0 -log-format json 2>"$work/daemon.log" &
dpid=$!
pids+=("$dpid")
metrics_addr=""
for _ in $(seq 1 100); do
	metrics_addr=$(grep -o '"msg":"serving metrics","addr":"[^"]*"' "$work/daemon.log" | sed 's/.*"addr":"//; s/"$//' || true)
	[[ -n "$metrics_addr" ]] && break
	sleep 0.1
done
[[ -n "$metrics_addr" ]] || { cat "$work/daemon.log" >&2; die "the sampler daemon did not serve metrics"; }
scrape() {
	curl -fsS "http://$metrics_addr/metrics" |
		awk '/^go_goroutines /{g=$2} /^process_resident_memory_bytes /{r=$2} /^go_memstats_heap_inuse_bytes /{h=$2}
		     END {printf "goroutines %d, RSS %.1f MiB, heap in use %.1f MiB", g, r/1048576, h/1048576}'
}
rounds_done() { grep -c '"msg":"round stored"' "$work/daemon.log" || true; }
while (($(rounds_done) < 3)); do sleep 0.2; done
sleep 0.5
echo "after 3 rounds:  $(scrape)"
while (($(rounds_done) < daemon_rounds)); do
	kill -0 "$dpid" 2>/dev/null || { cat "$work/daemon.log" >&2; die "the sampler daemon died"; }
	sleep 0.2
done
sleep 0.5
echo "after $daemon_rounds rounds: $(scrape)"
kill -TERM "$dpid"
wait "$dpid" || die "the sampler daemon exited with $? after SIGTERM"
grep -q '"msg":"round not stored"' "$work/daemon.log" && die "a daemon round was not stored"

if [[ "${BENCH_GO:-1}" != 0 ]]; then
	echo
	echo "== go test -run '^\$' -bench . -benchmem ${BENCH_FLAGS:-} ./probe ./store/file ./store/influx ./policy ./cmd/policygen"
	INFLUX_URL="$influx_url" go test -run '^$' -bench . -benchmem ${BENCH_FLAGS:-} ./probe ./store/file ./store/influx ./policy ./cmd/policygen
fi
exit "$over"
