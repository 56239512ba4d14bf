#!/usr/bin/env bash
# test.sh — what `make test` and CI run: vet, gofmt, staticcheck, then every
# test under -race against a real InfluxDB 1.8 server (started here, stopped on
# exit) and the mock-llm interop server (started by its test).
set -euo pipefail
cd "$(dirname "$0")/.."

export LANEWATCH_INFLUXD_STATE="${LANEWATCH_INFLUXD_STATE:-$(mktemp -d)}"
scripts/influxd.sh build
trap 'scripts/influxd.sh stop >/dev/null 2>&1 || true' EXIT
eval "$(scripts/influxd.sh start | grep '^INFLUX_URL=')"
export INFLUX_URL
export INFLUXD_BIN="${INFLUXD_BIN:-${LANEWATCH_CACHE:-$HOME/.cache/lanewatch}/bin/influxd}"

if [[ ! -d interop/node_modules/@dwmkerr/mock-llm ]]; then
	npm ci --prefix interop --no-audit --no-fund
fi

echo "== go vet"
go vet ./...
echo "== gofmt"
bad="$(gofmt -l $(git ls-files '*.go'))"
[[ -z "$bad" ]] || { echo "gofmt needed: $bad"; exit 1; }
if command -v staticcheck >/dev/null || [[ -x "$(go env GOPATH)/bin/staticcheck" ]]; then
	echo "== staticcheck"
	PATH="$PATH:$(go env GOPATH)/bin" staticcheck ./...
fi
echo "== go test -race (INFLUX_URL=$INFLUX_URL)"
# -p 2: this is a 2-core machine; fuzz targets run their seed corpora only.
go test -race -p 2 -timeout 20m ./... "$@"
