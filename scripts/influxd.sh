#!/usr/bin/env bash
# influxd.sh — a throwaway InfluxDB 1.8 server on loopback for tests.
#
#   scripts/influxd.sh build   install influxd 1.8.10 into $LANEWATCH_CACHE/bin (if missing)
#   scripts/influxd.sh start   start it on a free 127.0.0.1 port, create database "lanewatch",
#                              print INFLUX_URL=http://127.0.0.1:PORT
#   scripts/influxd.sh stop    stop it (by PID) and remove its data
#
# Environment: LANEWATCH_CACHE (default ~/.cache/lanewatch), INFLUXD_BIN (default
# $LANEWATCH_CACHE/bin/influxd), LANEWATCH_INFLUXD_STATE (state dir, default
# ${TMPDIR:-/tmp}/lanewatch-influxd; holds pid, url, log and the data dir).
set -euo pipefail

cache="${LANEWATCH_CACHE:-$HOME/.cache/lanewatch}"
bin="${INFLUXD_BIN:-$cache/bin/influxd}"
state="${LANEWATCH_INFLUXD_STATE:-${TMPDIR:-/tmp}/lanewatch-influxd}"
version=1.8.10

die() { echo "influxd.sh: $*" >&2; exit 1; }

# port_in_use PORT: true when something accepts connections on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port [EXCLUDE]: print a loopback port nobody listens on.
free_port() {
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + RANDOM % 40000))
		[[ "$p" == "${1:-}" ]] && continue
		port_in_use "$p" || { echo "$p"; return 0; }
	done
	die "no free loopback port found"
}

# http METHOD PORT PATH: print the HTTP status code of a bodyless request.
http() {
	local status
	exec 3<>"/dev/tcp/127.0.0.1/$2" || return 1
	printf '%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n' "$1" "$3" >&3
	read -r _ status _ <&3 || status=000
	exec 3<&- 3>&-
	echo "$status"
}

build() {
	if [[ -x "$bin" ]]; then
		echo "influxd.sh: $bin present"
		return 0
	fi
	command -v go >/dev/null || die "go not found on PATH"
	mkdir -p "$(dirname "$bin")"
	echo "influxd.sh: building influxd $version into $(dirname "$bin") (a few minutes)"
	CGO_ENABLED=0 GOBIN="$(dirname "$bin")" \
		go install -ldflags="-s -w -X main.version=$version" \
		"github.com/influxdata/influxdb/cmd/influxd@v$version"
	[[ -x "$bin" ]] || die "build finished but $bin is missing"
}

start() {
	[[ -x "$bin" ]] || die "$bin missing: run '$0 build' first"
	if [[ -f "$state/pid" ]] && kill -0 "$(cat "$state/pid")" 2>/dev/null; then
		echo "INFLUX_URL=$(cat "$state/url")"
		return 0
	fi
	rm -rf "$state"
	mkdir -p "$state/data"
	local http_port rpc_port pid url i
	http_port=$(free_port)
	rpc_port=$(free_port "$http_port")
	url="http://127.0.0.1:$http_port"
	INFLUXDB_HTTP_BIND_ADDRESS="127.0.0.1:$http_port" \
	INFLUXDB_BIND_ADDRESS="127.0.0.1:$rpc_port" \
	INFLUXDB_HTTP_FLUX_ENABLED=true \
	INFLUXDB_HTTP_AUTH_ENABLED=false \
	INFLUXDB_HTTP_LOG_ENABLED=false \
	INFLUXDB_HTTP_MAX_ROW_LIMIT=1000 \
	INFLUXDB_META_DIR="$state/data/meta" \
	INFLUXDB_DATA_DIR="$state/data/data" \
	INFLUXDB_DATA_WAL_DIR="$state/data/wal" \
	INFLUXDB_DATA_QUERY_LOG_ENABLED=false \
	INFLUXDB_MONITOR_STORE_ENABLED=false \
	INFLUXDB_REPORTING_DISABLED=true \
	INFLUXDB_LOGGING_LEVEL=warn \
	INFLUXDB_LOGGING_SUPPRESS_LOGO=true \
		nohup "$bin" run -config /dev/null >"$state/influxd.log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$state/pid"
	echo "$url" >"$state/url"
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || { tail -n 20 "$state/influxd.log" >&2; die "influxd exited during start"; }
		[[ "$(http GET "$http_port" /ping 2>/dev/null)" == 204 ]] && break
		sleep 0.1
	done
	[[ "$(http GET "$http_port" /ping 2>/dev/null)" == 204 ]] || { stop; die "influxd did not answer /ping within 30s"; }
	[[ "$(http POST "$http_port" '/query?q=CREATE%20DATABASE%20lanewatch')" == 200 ]] ||
		{ stop; die "could not create database lanewatch"; }
	echo "INFLUX_URL=$url"
}

stop() {
	if [[ -f "$state/pid" ]]; then
		local pid i
		pid=$(cat "$state/pid")
		if kill "$pid" 2>/dev/null; then
			for i in $(seq 1 100); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
			kill -9 "$pid" 2>/dev/null || true
		fi
	fi
	rm -rf "$state"
}

case "${1:-}" in
build) build ;;
start) start ;;
stop) stop ;;
*) echo "usage: $0 build|start|stop" >&2; exit 2 ;;
esac
