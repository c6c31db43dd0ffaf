# Tether — see README.md. `make run` and `make test` are the two entry points.
SHELL := /bin/bash
GO ?= go
BIN := bin/tetherd
GOFLAGS_TEST ?= -race -count=1 -timeout 15m

.PHONY: all web build run test test-go test-ts test-web vet generate check-generated node_modules clean

all: build

node_modules: node_modules/.package-lock.json
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

## web: build the Web Shell (webshell/, on the SDK in client-ts/) into webshell/dist,
## which go:embed puts into tetherd
web: node_modules
	npm run --silent build -w @tether/client
	npm run --silent build -w @tether/webshell

build: web
	$(GO) build -o $(BIN) ./cmd/tetherd

## run: build and start tetherd with its embedded defaults (prints URL and token)
run: build
	./$(BIN) serve $(ARGS)

## test: everything — vet, generated-code check, Go tests with -race, TS SDK, Web Shell
test: node_modules vet check-generated test-go test-node test-ts test-web

test-go: build
	@test -x test/agents/node_modules/.bin/claude-agent-acp -a -x test/agents/node_modules/.bin/qwen || \
	  echo "WARNING: real agents not installed, the real-agent suite (test/realagents) is SKIPPED: run (cd test/agents && npm ci --no-audit --no-fund)"
	TETHERD_BIN=$(CURDIR)/$(BIN) $(GO) test $(GOFLAGS_TEST) ./...

## test-node: a real EventSource client (npm eventsource) against the built daemon
test-node: build node_modules
	TETHERD_BIN=$(CURDIR)/$(BIN) node --test test/sse/

## test-ts: the TypeScript SDK (client-ts): tsc build, strict type-check, vitest (unit + against bin/tetherd)
test-ts: build node_modules
	cd client-ts && npm run build && npm run typecheck && TETHERD_BIN=$(CURDIR)/$(BIN) npx --no-install vitest run

## test-web: the Web Shell: vitest component/state tests, then Playwright (playwright-core
## driving /usr/bin/chromium) end-to-end against bin/tetherd and its demo agent
test-web: build node_modules
	npm run --silent test -w @tether/webshell
	TETHERD_BIN=$(CURDIR)/$(BIN) npm run --silent test:e2e -w @tether/webshell

vet:
	$(GO) vet ./...

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

clean:
	rm -rf bin
