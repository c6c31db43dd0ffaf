# Tether — see README.md. `make run` and `make test` are the two entry points.
SHELL := /bin/bash
GO ?= go
BIN := bin/tetherd
CLI := bin/tether
GOFLAGS_TEST ?= -race -count=1 -timeout 15m

# Build stamps (internal/buildinfo): a release tag v1.2.3 on HEAD gives 1.2.3,
# otherwise the contract's info.version with -dev; the date is the commit's,
# so two builds of one commit are identical.
API_VERSION := $(shell sed -n 's/^  version: *//p' api/openapi.yaml | head -1)
VERSION ?= $(or $(shell git describe --tags --exact-match --match 'v*' 2>/dev/null | sed 's/^v//'),$(API_VERSION)-dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
DATE ?= $(shell git log -1 --format=%cI 2>/dev/null)
BUILDINFO := github.com/tether/tether/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(DATE)

.PHONY: all web build run test test-go test-go-sqlite test-pg test-pg-store test-pg-crash-start test-pg-crash-wait test-node test-ts test-pack test-web vet generate check-generated check-web check-size screenshot dist test-dist node_modules clean

all: build

node_modules: node_modules/.package-lock.json
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

## web: build the Web Shell (webshell/, on the SDK source in client-ts/src) into
## webshell/dist, which go:embed puts into tetherd. dist/ is committed (a plain
## `go build` needs no npm) and the build is deterministic: commit what changed.
web: node_modules
	npm run --silent build -w @tether/webshell

## build: bin/tetherd (the daemon) and bin/tether (its terminal client, docs/cli.md)
build: web
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tetherd
	$(GO) build -ldflags '$(LDFLAGS)' -o $(CLI) ./cmd/tether

## run: build and start tetherd with its embedded defaults (prints URL and token)
run: build
	./$(BIN) serve $(ARGS)

## test: everything — vet, generated-code check, Go tests with -race, TS SDK, Web Shell.
## The crash matrix's PostgreSQL pass runs in the background beside the
## suites outside Go (it waits on daemons and agents, not the CPU: 545 s
## of CI's 30 minutes), and its output comes at the end.
test: check-size node_modules vet check-generated check-web test-go-sqlite test-pg-store test-pg-crash-start \
	test-node test-ts test-pack test-web test-dist test-pg-crash-wait

## test-go: the Go suites on SQLite, then the store-backed ones again on PostgreSQL
test-go: test-go-sqlite test-pg

test-go-sqlite: build
	@echo "== $$(date -u +%T) test-go-sqlite"
	@test -x test/agents/node_modules/.bin/claude-agent-acp -a -x test/agents/node_modules/.bin/qwen || \
	  echo "WARNING: real agents not installed, the real-agent suite (test/realagents) is SKIPPED: run (cd test/agents && npm ci --no-audit --no-fund)"
	@test -n "$$TETHER_TEST_POSTGRES_URL" || \
	  echo "WARNING: TETHER_TEST_POSTGRES_URL is not set: the PostgreSQL suites (store, events, sessions, server, crash matrix on PostgreSQL; test/cluster) are SKIPPED (docs/scale-out.md, Development)"
	TETHERD_BIN=$(CURDIR)/$(BIN) TETHER_BIN=$(CURDIR)/$(CLI) $(GO) test $(GOFLAGS_TEST) ./...

## test-pg: the store-backed suites again, on PostgreSQL (when TETHER_TEST_POSTGRES_URL is set)
test-pg: test-pg-store test-pg-crash-start test-pg-crash-wait

test-pg-store: build
	@echo "== $$(date -u +%T) test-pg-store"
	@if [ -n "$$TETHER_TEST_POSTGRES_URL" ]; then \
	  echo "== the store-backed suites again, on PostgreSQL"; \
	  TETHER_TEST_DATABASE=postgres TETHERD_BIN=$(CURDIR)/$(BIN) $(GO) test $(GOFLAGS_TEST) $(PG_RACE_PACKAGES) && \
	  TETHER_TEST_DATABASE=postgres TETHERD_BIN=$(CURDIR)/$(BIN) $(GO) test $(GOFLAGS_PG) $(PG_PACKAGES); \
	fi

# The crash matrix on PostgreSQL in the background: its output and exit
# status land in bin/, and test-pg-crash-wait reports them.
test-pg-crash-start: build
	@rm -f $(BIN)-pgcrash.log $(BIN)-pgcrash.rc
	@if [ -n "$$TETHER_TEST_POSTGRES_URL" ]; then \
	  echo "== the crash matrix on PostgreSQL, in the background (its output at the end)"; \
	  (TETHER_TEST_DATABASE=postgres TETHERD_BIN=$(CURDIR)/$(BIN) $(GO) test $(GOFLAGS_PG) ./test/crash/ >$(BIN)-pgcrash.log 2>&1; \
	   echo $$? >$(BIN)-pgcrash.rc) & \
	fi

test-pg-crash-wait:
	@echo "== $$(date -u +%T) test-pg-crash-wait"
	@if [ -n "$$TETHER_TEST_POSTGRES_URL" ]; then \
	  while [ ! -f $(BIN)-pgcrash.rc ]; do sleep 2; done; \
	  echo "== the crash matrix on PostgreSQL"; cat $(BIN)-pgcrash.log; \
	  exit $$(cat $(BIN)-pgcrash.rc); \
	fi

## PG_RACE_PACKAGES and PG_PACKAGES are the suites `make test` runs a second
## time on PostgreSQL (TETHER_TEST_DATABASE=postgres): the store's and the
## event writer's, whose PostgreSQL code (leadership, transaction status,
## its own statements) runs nowhere else, with -race; the session core's,
## the HTTP adapter's and the crash matrix (test-pg-crash-start) without it: their code ran
## under -race in the SQLite pass, and the PostgreSQL pass is for what the
## database does (./server/ took 114 s without -race, 302 s with it, on
## SQLite on CI's machine: the whole of make test had outgrown 30 minutes).
PG_RACE_PACKAGES := ./internal/store/ ./internal/events/
PG_PACKAGES := ./internal/sessions/ ./server/
GOFLAGS_PG ?= -count=1 -timeout 15m

## test-node: a real EventSource client (npm eventsource) against the built daemon
test-node: build node_modules
	@echo "== $$(date -u +%T) test-node"
	TETHERD_BIN=$(CURDIR)/$(BIN) node --test test/sse/

## test-ts: the TypeScript SDK (client-ts): tsc build, strict type-check, vitest (unit + against bin/tetherd)
test-ts: build node_modules
	@echo "== $$(date -u +%T) test-ts"
	cd client-ts && npm run build && npm run typecheck && TETHERD_BIN=$(CURDIR)/$(BIN) npx --no-install vitest run

## test-pack: the SDK as a third party gets it: npm pack, install the tarball into
## a scratch project (Node 20, TypeScript strict, a Vite browser bundle) and run
## its example against bin/tetherd (test/pack; needs the npm registry)
test-pack: build node_modules
	@echo "== $$(date -u +%T) test-pack"
	TETHERD_BIN=$(CURDIR)/$(BIN) node --test test/pack/

## test-web: the Web Shell: vitest component/state tests, then Playwright (playwright-core
## driving /usr/bin/chromium) end-to-end against bin/tetherd and its demo agent
test-web: build node_modules
	@echo "== $$(date -u +%T) test-web"
	npm run --silent test -w @tether/webshell
	TETHERD_BIN=$(CURDIR)/$(BIN) npm run --silent test:e2e -w @tether/webshell

## vet: go vet, and go-check-sumtype (pinned in go.mod's tool directives):
## a type switch over a declared sum type (//sumtype:decl, e.g. the session
## actor's effects) without a default must name every kind
vet:
	$(GO) vet ./...
	$(GO) tool go-check-sumtype ./...

## generate: regenerate all code derived from api/openapi.yaml (Go server, client-ts/src/gen)
generate: node_modules
	$(GO) generate ./...
	cd client-ts && npm run --silent generate

## check-generated: regenerate into a scratch copy and fail on any difference
## (the scratch copy borrows this tree's node_modules for the TS generator)
check-generated: node_modules
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	git ls-files -co --exclude-standard | grep -v '^node_modules/' | tar -cf - -T - | tar -xf - -C $$tmp; \
	(cd $$tmp && $(GO) generate ./... >/dev/null) || exit 1; \
	ln -s $(CURDIR)/node_modules $$tmp/node_modules; \
	(cd $$tmp/client-ts && rm -rf src/gen && $(CURDIR)/node_modules/.bin/openapi-ts -f openapi-ts.config.mjs >/dev/null) || { echo "client-ts generation failed"; exit 1; }; \
	fail=0; for f in $$(cd $$tmp && find . -name '*.gen.go' -o -path './client-ts/src/gen/*' -type f | sed 's|^\./||'); do \
	  if ! cmp -s "$$tmp/$$f" "$$f"; then echo "out of date: $$f (run make generate)"; fail=1; fi; \
	done; \
	for f in $$(find client-ts/src/gen -type f 2>/dev/null); do \
	  if [ ! -e "$$tmp/$$f" ]; then echo "stale: $$f (run make generate)"; fail=1; fi; \
	done; exit $$fail

## check-web: rebuild the Web Shell into a scratch dir and fail if the committed
## webshell/dist differs (run `make web` and commit)
check-web: node_modules
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	(cd webshell && node_modules/.bin/vite build --logLevel error --emptyOutDir --outDir $$tmp/dist) || exit 1; \
	diff -r $$tmp/dist webshell/dist >/dev/null || { diff -rq $$tmp/dist webshell/dist; echo "webshell/dist is out of date (run make web and commit it)"; exit 1; }

## check-size: fail on any git-tracked file over 2 MiB that .ci/bigfiles.allow
## does not name with a reason (a committed binary or dump stays in every
## clone's history); prints each offending path and size
check-size:
	@./.ci/bigfiles

## screenshot: rewrite the README's docs/images/webshell.png (1280x800) and
## webshell-phone.png (390x844) from the e2e suite (commit them)
screenshot: build node_modules
	TETHERD_BIN=$(CURDIR)/$(BIN) TETHER_SCREENSHOT=$(CURDIR)/docs/images \
	  node --test webshell/e2e/screenshot.e2e.test.mjs

## dist: release archives for linux/amd64 and linux/arm64 in dist/ (tetherd,
## LICENSE, NOTICE, THIRD_PARTY_LICENSES, README, docs/install.md) + SHA256SUMS
dist:
	VERSION=$(VERSION) GO_LDFLAGS='$(LDFLAGS)' DATE=$(DATE) GO=$(GO) ./.ci/dist

## test-dist: build the archives, unpack the linux/amd64 one, run its tetherd
test-dist: dist
	@echo "== $$(date -u +%T) test-dist"
	TETHER_DIST=$(CURDIR)/dist VERSION=$(VERSION) $(GO) test -count=1 -run TestDistArchive ./test/dist/

clean:
	rm -rf bin dist
