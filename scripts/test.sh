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

# The interop servers and the examples' openai SDK and typescript compiler.
if [[ ! -d interop/node_modules/@dwmkerr/mock-llm || ! -d interop/node_modules/openai || ! -d interop/node_modules/typescript ]]; then
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
go test -race -count=1 -p 2 -timeout 20m ./... "$@"

# Every fuzz target, briefly: the seed corpora ran above; this explores a
# little beyond them each run (LANEWATCH_FUZZTIME=0 skips; run longer locally).
# A new failing input is written to testdata/fuzz/ and fails the run. A run
# that only hits the fuzz engine's own "context deadline exceeded" at the end
# of -fuzztime (a known go test -fuzz flake) is run once more.
fuzztime="${LANEWATCH_FUZZTIME:-5s}"
fuzz() {
	go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "./$1" >"$fuzzlog" 2>&1
}
if [[ "$fuzztime" != "0" ]]; then
	echo "== fuzz ($fuzztime per target)"
	fuzzlog="$(mktemp)"
	for target in config:FuzzParse probe:FuzzSSE probe:FuzzQuota series:FuzzDecode series/lineproto:FuzzPlainLine series:FuzzFileRead policy:FuzzBookInput policy:FuzzParseFile; do
		pkg="${target%%:*}" name="${target##*:}"
		if ! fuzz "$pkg" "$name"; then
			if grep -q "context deadline exceeded" "$fuzzlog" && ! grep -q "Failing input written" "$fuzzlog"; then
				echo "$name: fuzz engine deadline flake; running it again"
				fuzz "$pkg" "$name" || { grep -v '^fuzz: elapsed' "$fuzzlog"; exit 1; }
			else
				grep -v '^fuzz: elapsed' "$fuzzlog"
				exit 1
			fi
		fi
		echo "$name: $(tail -n 1 "$fuzzlog")"
	done
	rm -f "$fuzzlog"
fi
