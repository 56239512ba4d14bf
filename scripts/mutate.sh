#!/usr/bin/env bash
# mutate.sh — what `make mutate` runs: mutation testing of the core with
# gremlins, pinned and installed here if missing, one package after the
# other, printing each package's efficacy (killed / (killed + lived)) and
# its survivors. It takes minutes per package, so it is not part of
# `make test`. TESTING.md has the scores; the survivors judged equivalent,
# each with its reason, are in its history (git log -p TESTING.md).
#
# Scope: sampler/budget, policy, probe and report/backtest whole; of store
# only aggregate.go, filter.go and recorder.go. gremlins cannot select
# files, only exclude them (--exclude-files, a regexp over the path inside
# the package), so every other file of store, and its sub-packages, are
# excluded by name.
#
# Environment: MUTATE_PKGS (space-separated, default all five),
# MUTATE_WORKERS (default 2), MUTATE_TIMEOUT_COEFFICIENT (default 5: a
# mutant's tests may take 5 times the unmutated run; on a loaded machine
# many time out, and a timed-out mutant counts neither way, so raise it or
# lower the workers when the run says so), MUTATE_LOGS (directory for one
# log per package, default a temporary one, kept), INFLUXD_BIN (as for
# `make test`: set, the InfluxDB tests of store run against every mutant
# too; unset, they skip and a run is faster), MUTATE_MEM_GB (default 8:
# the address space each worker's tests may take, so that a mutant that
# makes a loop endless and grows memory is stopped before the machine's
# out-of-memory killer picks a process; 0: no limit).
set -euo pipefail
cd "$(dirname "$0")/.."

version=v0.6.0 # go list -m github.com/go-gremlins/gremlins@latest, 2026-12-01
gremlins="$(go env GOPATH)/bin/gremlins"
installed="$(go version -m "$gremlins" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/go-gremlins/gremlins" {print $3}' || true)"
if [[ "$installed" != "$version" ]]; then
	echo "== go install github.com/go-gremlins/gremlins/cmd/gremlins@$version (found: ${installed:-none})"
	go install "github.com/go-gremlins/gremlins/cmd/gremlins@$version"
fi

pkgs=(${MUTATE_PKGS:-sampler/budget policy probe store report/backtest})
workers="${MUTATE_WORKERS:-2}"
coefficient="${MUTATE_TIMEOUT_COEFFICIENT:-5}"
logs="${MUTATE_LOGS:-$(mktemp -d -t lanewatch-mutate.XXXXXX)}"
mkdir -p "$logs"

# excludes prints the --exclude-files flags that leave only the files of
# package $1 that mutation testing covers.
excludes() {
	case "$1" in
	store)
		local f name
		for f in store/*.go; do
			name="$(basename "$f")"
			case "$name" in
			*_test.go | aggregate.go | filter.go | recorder.go) ;;
			*) printf -- '--exclude-files\n^%s$\n' "${name//./\\.}" ;;
			esac
		done
		printf -- '--exclude-files\n/\n'
		;;
	esac
}

summary=()
for pkg in "${pkgs[@]}"; do
	log="$logs/${pkg//\//_}.log"
	mapfile -t ex < <(excludes "$pkg")
	echo "== gremlins unleash ./$pkg (log: $log)"
	# -count=1: gremlins times each mutant against the unmutated coverage
	# run, and a cached one takes no time, so every mutant would time out.
	(
	[[ "${MUTATE_MEM_GB:-8}" == 0 ]] || ulimit -v $(("${MUTATE_MEM_GB:-8}" * 1024 * 1024))
	GOFLAGS="${GOFLAGS:+$GOFLAGS }-count=1" exec "$gremlins" unleash --invert-logical --workers "$workers" --timeout-coefficient "$coefficient" \
		"${ex[@]}" "./$pkg" >"$log" 2>&1
	) || { echo "gremlins failed on $pkg:"; tail -20 "$log"; exit 1; }
	grep -E '^ *(LIVED|TIMED OUT|NOT VIABLE) ' "$log" || true
	grep -E '^(Killed|Timed out|Test efficacy|Mutator coverage):' "$log"
	if ! grep -qE '^Timed out: 0,' "$log"; then
		echo "warning: mutants of $pkg timed out (uncounted); try MUTATE_WORKERS=1 or a larger MUTATE_TIMEOUT_COEFFICIENT"
	fi
	summary+=("$(printf '%-16s %s' "$pkg" "$(grep -E '^Test efficacy:' "$log" | awk '{print $3}')")")
done

echo "== efficacy (equivalent survivors, listed in TESTING.md's git history, still count here)"
printf '%s\n' "${summary[@]}"
