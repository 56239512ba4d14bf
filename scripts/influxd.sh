#!/usr/bin/env bash
# influxd.sh — a throwaway InfluxDB 1.8 server on loopback for tests.
#
#   scripts/influxd.sh build   install influxd 1.8.10 into $LANEWATCH_CACHE/bin (if missing)
#   scripts/influxd.sh build VERSION
#                              build a newer 1.x (e.g. 1.13.2) WITHOUT Flux into
#                              $LANEWATCH_CACHE/bin/influxd-VERSION (if missing): from 1.9 on
#                              influxd links libflux (Rust, through cgo), whose crates are
#                              not reachable here; a stub libflux stands in, so InfluxQL
#                              (/query) and the writes (/write, /api/v2/write) work and
#                              Flux does not (run it with INFLUXDB_HTTP_FLUX_ENABLED=false).
#                              Tested with 1.11.8 and 1.13.2 (make test builds and runs
#                              1.13.2); slow the first time (1-3 CPU minutes, 5-25
#                              minutes of wall time on a busy machine), cached after.
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

# build_noflux VERSION: influxd VERSION from its Go module, with flux's cgo
# package libflux/go/libflux replaced by a stub whose every entry point
# fails, in a throwaway module that requires the release and replaces its
# flux module with the patched copy. Built with CGO_ENABLED=0 under nice.
build_noflux() {
	local v="$1" out="$cache/bin/influxd-$1" work dir fluxv fluxdir godir
	if [[ -x "$out" ]]; then
		echo "influxd.sh: $out present"
		return 0
	fi
	command -v go >/dev/null || die "go not found on PATH"
	mkdir -p "$(dirname "$out")"
	work=$(mktemp -d "${TMPDIR:-/tmp}/lanewatch-influxd-build.XXXXXX")
	trap "rm -rf '$work'" EXIT # expanded now (work is local); also when die exits
	dir=$(cd "$work" && go mod download -json "github.com/influxdata/influxdb@v$v" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || true # die below says so
	[[ -n "$dir" && -f "$dir/go.mod" ]] || die "go mod download github.com/influxdata/influxdb@v$v failed"
	fluxv=$(awk '$1 == "github.com/influxdata/flux" { print $2; exit }' "$dir/go.mod")
	godir=$(awk '$1 == "go" { print $2; exit }' "$dir/go.mod")
	[[ -n "$fluxv" ]] || die "influxdb v$v does not require github.com/influxdata/flux: build it with plain go install"
	fluxdir=$(cd "$work" && go mod download -json "github.com/influxdata/flux@$fluxv" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || true
	[[ -d "$fluxdir/libflux/go/libflux" ]] || die "flux $fluxv has no libflux/go/libflux"
	echo "influxd.sh: building influxd $v without Flux (flux $fluxv stubbed) into $out (1-3 CPU minutes)"
	cp -r "$fluxdir" "$work/flux"
	chmod -R u+w "$work/flux"
	rm -f "$work"/flux/libflux/go/libflux/{analyze,parser,link_dynamic,link_static}.go "$work"/flux/libflux/go/libflux/*_test.go
	cat >"$work/flux/libflux/go/libflux/stub.go" <<'STUB'
// Package libflux stands in for flux's cgo binding to the Rust libflux in an
// influxd built without Flux: every entry point fails with errNoFlux.
package libflux

import (
	"context"
	"errors"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/influxdata/flux/internal/fbsemantic"
	"github.com/influxdata/flux/semantic"
)

var errNoFlux = errors.New("flux is not available: this influxd was built without libflux")

type Options struct {
	Features []string `json:"features,omitempty"`
}

func NewOptions(ctx context.Context) Options                   { return Options{} }
func SemanticPackages() (map[string]*semantic.Package, error) { return nil, errNoFlux }

type SemanticPkg struct{}

func (p *SemanticPkg) MarshalFB() ([]byte, error) { return nil, errNoFlux }
func (p *SemanticPkg) Free()                      {}

func Analyze(astPkg *ASTPkg) (*SemanticPkg, error)                            { return nil, errNoFlux }
func AnalyzeWithOptions(astPkg *ASTPkg, options Options) (*SemanticPkg, error) { return nil, errNoFlux }
func AnalyzeString(script string) (*SemanticPkg, error)                        { return nil, errNoFlux }
func FindVarType(astPkg *ASTPkg, varName string) (semantic.MonoType, error) {
	return semantic.MonoType{}, errNoFlux
}
func FindVarTypes(script string, varNames []string) ([]semantic.MonoType, error) {
	return nil, errNoFlux
}
func FindVarTypeSemantic(pkg *SemanticPkg, varName string) (semantic.MonoType, error) {
	return semantic.MonoType{}, errNoFlux
}

type Analyzer struct{}

func NewAnalyzerWithOptions(options Options) (*Analyzer, error)           { return nil, errNoFlux }
func (p *Analyzer) AnalyzeString(src string) (*SemanticPkg, *FluxError)  { return nil, &FluxError{} }
func (p *Analyzer) Analyze(string, *ASTPkg) (*SemanticPkg, *FluxError)   { return nil, &FluxError{} }
func (p *Analyzer) Free()                                                {}

// EnvStdlib returns an empty type environment: no builtin has a type (the
// patched runtime.LookupBuiltinType answers a placeholder).
func EnvStdlib() []byte {
	b := flatbuffers.NewBuilder(64)
	fbsemantic.TypeEnvironmentStartAssignmentsVector(b, 0)
	v := b.EndVector(0)
	fbsemantic.TypeEnvironmentStart(b)
	fbsemantic.TypeEnvironmentAddAssignments(b, v)
	b.Finish(fbsemantic.TypeEnvironmentEnd(b))
	return b.FinishedBytes()
}

type FluxError struct{}

func (p *FluxError) Free()          {}
func (p *FluxError) Print()         {}
func (p *FluxError) GoError() error { return errNoFlux }

type ASTPkg struct{}

func (p ASTPkg) ASTHandle()                              {}
func (p ASTPkg) Format() (string, error)                 { return "", errNoFlux }
func (p ASTPkg) GetError(options Options) error          { return errNoFlux }
func (p *ASTPkg) MarshalJSON() ([]byte, error)           { return nil, errNoFlux }
func (p *ASTPkg) Free()                                  {}
func (p *ASTPkg) String() string                         { return "" }
func ParseString(src string) *ASTPkg                     { return &ASTPkg{} }
func Parse(fname string, src string) *ASTPkg             { return &ASTPkg{} }
func ParseJSON(bs []byte) (*ASTPkg, error)               { return nil, errNoFlux }
func MergePackages(outPkg *ASTPkg, inPkg *ASTPkg) error  { return errNoFlux }
STUB
	# flux's stdlib packages look up their builtins' types at init, in the
	# type environment libflux would embed; without it they would panic.
	local lookup="$work/flux/runtime/lookup.go"
	grep -q '^func LookupBuiltinType(pkg, name string) (semantic.MonoType, error) {$' "$lookup" ||
		die "flux $fluxv: runtime/lookup.go has no LookupBuiltinType to patch"
	sed -i '/^func LookupBuiltinType(pkg, name string) (semantic.MonoType, error) {$/a\
	if len(stdlibTypeEnvironment) == 0 { // built without libflux: a placeholder\
		return semantic.NewFunctionType(semantic.BasicString, nil), nil\
	}' "$lookup"
	printf 'module lanewatch.local/influxd-noflux\n\ngo %s\n\nrequire github.com/influxdata/influxdb v%s\n\nreplace github.com/influxdata/flux => ./flux\n' \
		"${godir:-1.22}" "$v" >"$work/go.mod"
	printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/influxdata/influxdb/cmd/influxd"\n' >"$work/tools.go"
	cp "$dir/go.sum" "$work/go.sum"
	(cd "$work" && go mod tidy) || die "go mod tidy for influxd $v failed"
	# Built beside the cache and renamed into it, so that an interrupted
	# build never leaves a partial binary that the next run takes as present.
	(cd "$work" && CGO_ENABLED=0 nice -n 19 go build -ldflags="-s -w -X main.version=$v" -o "$work/influxd" \
		github.com/influxdata/influxdb/cmd/influxd) || die "building influxd $v without Flux failed"
	mv "$work/influxd" "$out.tmp" && mv "$out.tmp" "$out" || die "could not move the built influxd to $out"
	[[ -x "$out" ]] || die "build finished but $out is missing"
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
	INFLUXDB_HTTP_AUTH_ENABLED=false \
	INFLUXDB_HTTP_LOG_ENABLED=false \
	INFLUXDB_HTTP_MAX_ROW_LIMIT=1000 \
	INFLUXDB_COORDINATOR_WRITE_TIMEOUT=60s \
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

# build VERSION: a newer 1.x without Flux (build_noflux).
if [[ "${1:-}" == build && -n "${2:-}" && "${2:-}" != "$version" ]]; then
	build_noflux "$2"
	exit 0
fi

case "${1:-}" in
build) build ;;
start) start ;;
stop) stop ;;
*) echo "usage: $0 build|start|stop" >&2; exit 2 ;;
esac
