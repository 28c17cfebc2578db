# warcproxy: build, run and check.
#
#   make build   bin/warcproxy and bin/warcbench, version from `git describe`
#   make image   the container image warcproxy:VERSION (deploy/docker/Dockerfile)
#   make run     build, then proxy on 127.0.0.1:8000 writing into ./warcs
#   make test    the test-only node packages (npm ci, when npm is there and
#                they are missing or older than their lockfile) and the
#                VersityGW S3 server (make versitygw), go vet, then every
#                test with the race detector (what CI runs), in the root
#                module and in deploy/kubernetes' own module
#   make versitygw  the S3 server of the upload tests, built once with
#                go install into ~/.cache/warcproxy-tools (a few minutes)
#   make bench   benchmarks only
#   make fuzz    every Fuzz target for FUZZTIME each
#   make lint    go vet, golangci-lint and staticcheck (from tools/go.mod), both modules
#   make check   lint and test
#
# Tests that write WARCs also verify them with warcio.js, the replay
# test drives ReplayWeb.page and the WebSocket tests talk through the
# proxy with the ws package: `make test` installs them with npm ci where
# npm exists. The upload tests ship to a real S3 server, VersityGW, which
# `make test` builds with go install (outside the repository, once), and
# read back with rclone (apt-get install rclone; make installs no
# Debian packages).
# Without them (no npm, offline, no rclone) those checks are skipped
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
NODE_PACKAGES := internal/testutil/warcio internal/e2e/testdata/replayweb internal/e2e/testdata/websocket
NODE_STAMPS := $(NODE_PACKAGES:%=%/node_modules/.package-lock.json)
# The S3 server of the upload tests. internal/testutil/s3test looks for it
# under the same name, in the environment or at the same default path, and
# its test checks that this version is s3test.Version. Built outside the
# repository: neither the binary nor its modules land in the tree.
VERSITYGW_VERSION := v1.8.0
WARCPROXY_TEST_VERSITYGW ?= $(HOME)/.cache/warcproxy-tools/versitygw-$(VERSITYGW_VERSION)/versitygw

.PHONY: build image run test node-packages versitygw bench fuzz lint check clean

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/warcproxy ./cmd/warcproxy
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/warcbench ./cmd/warcbench

# BuildKit (the default builder since Docker 23; DOCKER_BUILDKIT=1 before)
# for the Dockerfile's cache mounts.
image:
	DOCKER_BUILDKIT=1 docker build -f deploy/docker/Dockerfile --build-arg VERSION=$(VERSION) -t warcproxy:$(VERSION) -t warcproxy .

run: build
	./bin/warcproxy --address 127.0.0.1 --port 8000 --dir ./warcs

test: node-packages versitygw
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

versitygw: $(WARCPROXY_TEST_VERSITYGW)

# go install pkg@version ignores the repository's go.mod (run from a
# temporary folder all the same, with -mod=mod over any -mod=vendor in
# GOFLAGS): the modules go to the module cache, the binary to its own
# folder. The binary is the target: once it is there this does nothing.
# A failed build (offline) does not stop the tests: the upload tests skip
# with a hint, and under CI=true the build failing fails here, first.
$(WARCPROXY_TEST_VERSITYGW):
	@if [[ "$(@F)" != versitygw ]]; then \
		echo "WARCPROXY_TEST_VERSITYGW=$@: go install names the binary versitygw, so the path must end in /versitygw"; \
		exit 1; \
	fi; \
	echo "building versitygw $(VERSITYGW_VERSION) into $(@D) (a few minutes, once)"; \
	start=$$SECONDS; tmp="$$(mktemp -d)"; \
	if (cd "$$tmp" && GOBIN="$(@D)" GOFLAGS=-mod=mod GOWORK=off \
		$(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)) && [[ -x "$@" ]]; then \
		rm -rf "$$tmp"; echo "versitygw built in $$((SECONDS - start))s: $@"; \
	else \
		rm -rf "$$tmp"; echo "building versitygw failed: the upload tests will be skipped (under CI=true, make stops here)"; \
		ci="$${CI:-}"; case "$${ci,,}" in true|1) exit 1;; esac; \
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
