# lanewatch — two commands matter: `make demo` and `make test`.
GO      ?= go
BIN     := bin
PKGS    := ./...

.PHONY: all build demo figures heldout test vet lint bench mutate clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# The whole job on this machine: lanesim stand-in lanes, sampler rounds into
# the embedded store, the policy file they wrote for the current hour, the
# lane a CI job takes, and the next steps to your own config.
demo: build
	./scripts/demo.sh

# Every backtest figure the README quotes (a test in tests/figures holds the
# README to them; docs/backtest.md explains the columns).
figures: build
	./scripts/figures.sh

# lanewatch's decisions on the held-out worlds, none of its constants chosen
# on them (BENCHMARKS.md, "Decisions on worlds they were not tuned on").
heldout: build
	./scripts/heldout.sh

# vet, staticcheck (when installed) and every test under -race, with a real
# InfluxDB server and the mock-llm interop server started for them.
test:
	./scripts/test.sh

vet:
	$(GO) vet $(PKGS)
	test -z "$$(gofmt -l . | grep -v node_modules)"

bench:
	./scripts/bench.sh

# Mutation testing of the core (gremlins, pinned and installed by the
# script): each package's efficacy and survivors. Minutes, not seconds; not
# part of `test`. TESTING.md records the scores and the equivalent survivors.
mutate:
	./scripts/mutate.sh

clean:
	rm -rf $(BIN) .demo
