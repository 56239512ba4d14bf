#!/usr/bin/env bash
# test.sh — what `make test` and CI run: vet, gofmt, staticcheck, then every
# test under -race against a real InfluxDB 1.8 server (started here, stopped on
# exit) and the mock-llm interop server (started by its test).
#
# Nothing is skipped silently: what this script leaves out (staticcheck,
# npm) and every test that skips for a missing tool (internal/missingtool:
# Chromium, rsvg-convert, influxd, node, systemd-analyze, promtool and
# prometheus of Debian's prometheus package...) is listed in one summary at
# the end. With CI=true such a skip fails the run (the Go tests fail at
# once; this script fails at the end for its own).
set -euo pipefail
cd "$(dirname "$0")/.."

# Skips of this script, and the file the tests append theirs to
# (internal/missingtool, "TEST: missing tool: ..."). A test skipped for a
# missing tool also says so in `go test -v` and `-json` output, with the
# prefix "missing tool: ".
skipped=() # fail the run under CI
chosen=()  # asked for (LANEWATCH_FUZZTIME=0): listed, never failing
export LANEWATCH_SKIPLOG="$(mktemp)"
ci_strict() { [[ -n "${CI:-}" && "${CI:-}" != "false" && "${CI:-}" != "0" ]]; }
summary() {
	local status=$? n
	scripts/influxd.sh stop >/dev/null 2>&1 || true
	n=$((${#skipped[@]} + ${#chosen[@]} + $(sort -u "$LANEWATCH_SKIPLOG" | grep -c . || true)))
	if ((n > 0)); then
		echo "== skipped ($n)"
		((${#skipped[@]} == 0)) || printf '  %s\n' "${skipped[@]}"
		((${#chosen[@]} == 0)) || printf '  %s\n' "${chosen[@]}"
		sort -u "$LANEWATCH_SKIPLOG" | sed 's/^/  /'
		if ci_strict && ((status == 0)) && ((${#skipped[@]} > 0)); then
			echo "CI=$CI: nothing may be skipped; install what is missing" >&2
			status=1
		fi
	else
		echo "== skipped: nothing"
	fi
	rm -f "$LANEWATCH_SKIPLOG"
	exit "$status"
}
trap summary EXIT

export LANEWATCH_INFLUXD_STATE="${LANEWATCH_INFLUXD_STATE:-$(mktemp -d)}"
scripts/influxd.sh build
eval "$(scripts/influxd.sh start | grep '^INFLUX_URL=')"
export INFLUX_URL
export INFLUXD_BIN="${INFLUXD_BIN:-${LANEWATCH_CACHE:-$HOME/.cache/lanewatch}/bin/influxd}"
# A newer 1.x without Flux for the tests that start one (influxtest.StartNewer:
# the store's InfluxQL path and writes, the Grafana queries): built once into
# the cache, 1-3 CPU minutes the first time.
# A build that fails (no module proxy) is listed as a skip, and fails CI.
if [[ -z "${INFLUXD_BIN_NEWER:-}" ]]; then
	newer_version=1.13.2
	if scripts/influxd.sh build "$newer_version"; then
		export INFLUXD_BIN_NEWER="${LANEWATCH_CACHE:-$HOME/.cache/lanewatch}/bin/influxd-$newer_version"
	else
		skipped+=("scripts/influxd.sh build $newer_version failed: the influxtest.StartNewer tests skip (no newer InfluxDB 1.x to test against)")
	fi
fi

# The npm packages of the interop servers and of the TypeScript client
# example, from their committed lockfiles: installed when missing or older
# than the lockfile (npm ci writes node_modules/.package-lock.json).
for dir in tests/interop examples/typescript; do
	if [[ ! -e "$dir/node_modules/.package-lock.json" || "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]]; then
		if command -v npm >/dev/null; then
			npm ci --prefix "$dir" --no-audit --no-fund
		else
			skipped+=("npm ci --prefix $dir: missing tool: npm (install: apt-get install npm); the tests that need its packages skip")
		fi
	fi
done

echo "== go vet"
go vet ./...
echo "== gofmt"
bad="$(gofmt -l $(git ls-files '*.go'))"
[[ -z "$bad" ]] || { echo "gofmt needed: $bad"; exit 1; }
if command -v staticcheck >/dev/null || [[ -x "$(go env GOPATH)/bin/staticcheck" ]]; then
	echo "== staticcheck"
	PATH="$PATH:$(go env GOPATH)/bin" staticcheck ./...
else
	skipped+=("staticcheck: missing tool: staticcheck (install: go install honnef.co/go/tools/cmd/staticcheck@latest)")
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
if [[ "$fuzztime" == "0" ]]; then
	chosen+=("fuzz: LANEWATCH_FUZZTIME=0, on request (the seed corpora ran with the tests)")
else
	echo "== fuzz ($fuzztime per target)"
	fuzzlog="$(mktemp)"
	for target in config:FuzzParse probe:FuzzSSE probe:FuzzQuota store:FuzzDecode store:FuzzPlain store/file:FuzzRead policy:FuzzBookInput policy:FuzzParseFile; do
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
