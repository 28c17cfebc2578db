# warcproxy: build, run and check.
#
#   make build   bin/warcproxy and bin/warcbench, version from `git describe`
#   make image   the container image warcproxy:VERSION (deploy/docker/Dockerfile)
#   make run     build, then proxy on 127.0.0.1:8000 writing into ./warcs
#   make test    the test-only node packages (npm ci, when npm is there and
#                they are missing or older than their lockfile), go vet, then
#                every test with the race detector (what CI runs), in the
#                root module and in deploy/kubernetes' own module
#   make bench   benchmarks only
#   make fuzz    every Fuzz target for FUZZTIME each
#   make lint    go vet, golangci-lint and staticcheck (from tools/go.mod), both modules
#   make check   lint and test
#
# Tests that write WARCs also verify them with warcio.js, and the replay
# test drives ReplayWeb.page: `make test` installs both with npm ci where
# npm exists. Without them (no npm, or offline) those checks are skipped
# locally with a hint, and fail under CI=true.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c

GO ?= go
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
FUZZTIME ?= 60s
# The linters live in their own module so their dependencies stay out of
# the product's go.mod; the path is absolute because the SUBMODULES below
# run them from their own folder.
TOOL := $(GO) tool -modfile=$(CURDIR)/tools/go.mod
# Modules of their own inside the tree, which `./...` does not reach: the
# Kubernetes manifests' test, whose k8s.io/* dependencies would otherwise
# sit in the product's go.mod. No go.work: each is run from its folder.
SUBMODULES := deploy/kubernetes
# The test-only node packages, each a folder with its package-lock.json.
NODE_PACKAGES := internal/testutil/warcio internal/e2e/testdata/replayweb
NODE_STAMPS := $(NODE_PACKAGES:%=%/node_modules/.package-lock.json)

.PHONY: build image run test node-packages bench fuzz lint check clean

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/warcproxy ./cmd/warcproxy
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/warcbench ./cmd/warcbench

# BuildKit (the default builder since Docker 23; DOCKER_BUILDKIT=1 before)
# for the Dockerfile's cache mounts.
image:
	DOCKER_BUILDKIT=1 docker build -f deploy/docker/Dockerfile --build-arg VERSION=$(VERSION) -t warcproxy:$(VERSION) -t warcproxy .

run: build
	./bin/warcproxy --address 127.0.0.1 --port 8000 --dir ./warcs

test: node-packages
	$(GO) vet ./...
	for m in $(SUBMODULES); do (cd "$$m" && { $(GO) mod tidy -diff >/dev/null || { echo "$$m: its go.mod is behind the root's: run go mod tidy in $$m"; exit 1; }; } && $(GO) vet ./...); done
	@# Every module's tests run even when one fails, so a failure in one
	@# does not hide the state of the others.
	status=0; \
	$(GO) test -race -count=1 -timeout 20m ./... || status=1; \
	for m in $(SUBMODULES); do (cd "$$m" && $(GO) test -race -count=1 -timeout 20m ./...) || status=1; done; \
	exit $$status

node-packages: $(NODE_STAMPS)

# npm ci writes node_modules/.package-lock.json, so a lockfile newer than
# it (a pull that changed it) installs again. A failed install (no network)
# does not stop the tests: those that need the packages skip with a hint,
# or fail under CI=true.
%/node_modules/.package-lock.json: %/package-lock.json
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "npm not found: the checks that need $* will be skipped"; \
	elif ! npm ci --prefix $* --no-audit --no-fund --loglevel=error; then \
		echo "npm ci --prefix $* failed: the checks that need it will be skipped (CI=true fails them)"; \
	fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# `go test -list` prints each package's matching names, then its "ok" line;
# -fuzz takes one package and one target at a time.
fuzz:
	@targets="$$($(GO) test -list '^Fuzz' ./... | awk '$$1 ~ /^Fuzz/ { n[++c] = $$1; next } $$1 == "ok" { for (i = 1; i <= c; i++) print $$2, n[i]; c = 0 }')"; \
	if [[ -z "$$targets" ]]; then echo "no fuzz targets"; exit 0; fi; \
	while read -r pkg name; do \
		echo "== $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) "$$pkg"; \
	done <<< "$$targets"

lint:
	$(GO) vet ./...
	$(TOOL) golangci-lint run ./...
	$(TOOL) staticcheck ./...
	for m in $(SUBMODULES); do \
		(cd "$$m" && $(GO) vet ./... && $(TOOL) golangci-lint run ./... && $(TOOL) staticcheck ./...); \
	done

check: lint test

clean:
	rm -rf bin
