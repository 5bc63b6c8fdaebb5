# witness: build, test, demo, bench, fuzz, lint.
# `make demo` and `make test` are the two commands a new machine needs (Go and Node).

GO       ?= go
BIN      := bin/witness
FUZZTIME ?= 3s
export GOFLAGS ?= -mod=mod

.PHONY: all build test unit peers demo demo-record bench fuzz lint cross docs docs-images clean

all: build

# A build names its commit (witness version); a release sets VERSION too.
VERSION_PKG := github.com/agent-trace-witness/witness/internal/version
# DATE is the commit's time in UTC (not the clock: the same commit builds the
# same bytes); .goreleaser.yaml sets the same three variables.
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
LDFLAGS ?= -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).Date=$(DATE) $(if $(VERSION),-X $(VERSION_PKG).Version=$(VERSION))

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/witness

# Pinned npm peers (MCP servers, RDF libraries) that the tests talk to.
peers:
	@if [ -L testdata/peers/node_modules ]; then \
		echo "testdata/peers/node_modules is a link to a shared install: not reinstalling it"; \
	elif [ -f testdata/peers/package-lock.json ]; then \
		if [ ! -d testdata/peers/node_modules ] || [ testdata/peers/package-lock.json -nt testdata/peers/node_modules/.package-lock.json ]; then \
			echo "installing pinned npm peers (testdata/peers)"; \
			cd testdata/peers && npm ci --no-audit --no-fund --loglevel=error; \
		fi; \
	fi

unit:
	$(GO) test ./...

test: peers lint cross build
	$(GO) test -count=1 -timeout 40m ./...
	@# the streams again with their run memory made inaccessible when each
	@# ends: a block kept past its stream faults (internal/offheap)
	$(GO) test -count=1 -timeout 20m -tags witness_offheapcheck ./graph ./verify ./report
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

demo: build
	@bash scripts/demo.sh
	@# --- issue 16: writes the incident report of the demo's story and prints its path ---
	@bash scripts/demo-report.sh

# Re-records testdata/demo/agent (the agent story of the demo's part 60):
# real agents through the proxies; needs node and the npm peers (make peers
# first if they are missing: not a prerequisite here, since `npm ci` empties
# a node_modules that is a symlink to a shared install).
demo-record: build
	@bash scripts/demo-record.sh

# The pictures of the report in the README and docs/guide/report.md, taken
# in headless Chromium by the browser tests: the agent story's first screen
# at 1280×800 (TestBrowserAgentStory), then the timeline and findings of
# the demo's agent-story report (TestBrowser with WITNESS_REPORT_PAGE).
docs-images: build
	WITNESS_REPORT_FIRST_SCREEN=$(CURDIR)/docs/images/report-first-screen.png $(GO) test -count=1 -run 'TestBrowserAgentStory$$' ./report
	@bash scripts/demo-report.sh >/dev/null
	WITNESS_REPORT_PAGE=$(CURDIR)/bin/demo-report/agent/report.html WITNESS_REPORT_SCREENSHOT=$(CURDIR)/bin/report.png $(GO) test -count=1 -run 'TestBrowser$$' ./report
	cp bin/report-timeline.png bin/report-findings.png docs/images/

bench: peers build
	@bash scripts/bench.sh

# Runs every fuzz target in the module for FUZZTIME each.
fuzz:
	@bash scripts/fuzz.sh $(FUZZTIME)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# The module builds everywhere (docs/design/platforms.md): every package is
# built, and vetted with its tests (so test files compile too), for each
# system in CROSS_GOOS on amd64, and built for each on arm64 too (the
# release targets; vet's checks do not depend on the architecture).
CROSS_GOOS ?= linux darwin windows
cross:
	@set -e; for os in $(CROSS_GOOS); do \
		echo "cross: GOOS=$$os GOARCH=amd64 go build ./... && go vet ./..."; \
		GOOS=$$os GOARCH=amd64 $(GO) build ./...; \
		GOOS=$$os GOARCH=amd64 $(GO) vet ./...; \
		echo "cross: GOOS=$$os GOARCH=arm64 go build ./..."; \
		GOOS=$$os GOARCH=arm64 $(GO) build ./...; \
	done

# Regenerates docs/cli (the command reference) and docs/man (the manual
# pages) from the command tree; TestCLIReference and TestManPages fail
# when they are stale.
docs:
	$(GO) test ./cmd/witness -run '^(TestCLIReference|TestManPages)$$' -count=1 -args -update

clean:
	rm -rf bin
