# Crosschat Relay: build, test and release entry points.
#
#   make build           the desktop app (Wails, webkit2gtk-4.1) in build/bin/crosschat-relay
#   make bindings        regenerate frontend/wailsjs after a bound Go method changed
#   make build-headless  the relay without window libraries (serve and CLI verbs only)
#   make install         build-headless, installed as $(PREFIX)/bin/crosschat-relay (PREFIX=~/.local)
#   make run             install, then `serve` it: http://localhost:4318/ (RUN_ARGS="--port 4319 --data-dir DIR")
#   make test            THE test command: gofmt and vet, race tests, tray and notifications on D-Bus, frontend tests and type-check, e2e
#   make e2e             MCP Inspector CLI + TypeScript SDK, and the dashboard in Chromium (with axe-core), against `serve`;
#                        the real Claude Code, Codex and Gemini CLIs as workers against a fake model
#   make e2e-clis        those CLI tests on both pinned lanes: .ci/clis (oldest supported) and .ci/clis-current
#   make e2e-clis-latest the same tests on whatever the npm registry serves today (scratch folder, not part of make test)
#   make dist            release packages in build/dist (deb, rpm, tar.gz, headless, Windows installer)
#   make dist-check      build and check them (as root: installs, upgrades and removes the .deb)
#   make vet-darwin      go vet every package with GOOS=darwin (no cgo): macOS-only compile errors
#   make vet-windows     go vet every package with GOOS=windows (mingw cgo, and no cgo): Windows-only compile errors
#   make windows-check   the Windows build under wine: unit tests and the release installer (as root; after make dist)
#   make fuzz            every Fuzz target for $(FUZZTIME)
#   make fuzz-ci         every Fuzz target for 5 s (part of make test)
#   make bench           Go benchmarks
#   make clean           remove build outputs (keeps the wails CLI and node_modules)
#
# System packages (Debian 12): libgtk-3-dev libwebkit2gtk-4.1-dev pkg-config;
# .ci/run installs them. Go, node 20 and npm are assumed.

SHELL       := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VERSION  ?= $(or $(shell git describe --tags --always --dirty 2>/dev/null),0.1.0-dev)
LDFLAGS  := -X main.version=$(VERSION)
WAILS    ?= .ci/bin/wails
HEADLESS := build/bin/crosschat-relay-headless
# make install puts the headless build in $(BINDIR).
PREFIX   ?= $(HOME)/.local
BINDIR   ?= $(PREFIX)/bin
# Build the pinned CLI only when WAILS points at it (WAILS=wails uses PATH).
WAILS_DEP := $(if $(filter .ci/bin/wails,$(WAILS)),.ci/bin/wails)
FUZZTIME ?= 10s
NPM_CI   := npm ci --no-audit --no-fund --loglevel=error

.PHONY: help deps build bindings build-headless install run frontend test vet vet-darwin vet-windows test-go test-desktop test-frontend e2e e2e-mcp e2e-dashboard e2e-clis e2e-clis-oldest e2e-clis-current e2e-clis-latest e2e-mesh dist dist-check windows-check fuzz fuzz-ci bench clean distclean

help:
	@sed -n 's/^#   make /  make /p' $(MAKEFILE_LIST)

# --- tools and dependencies (rebuilt only when their pins change) -----------

# The wails CLI, built from the pinned tools module (x/tools v0.30.0 fix).
.ci/bin/wails: build/tools/wails/go.mod build/tools/wails/go.sum build/tools/wails/tools.go
	@mkdir -p $(@D)
	@echo "==> building the pinned wails CLI into $@ (once; a minute or two)"
	cd build/tools/wails && go build -o $(CURDIR)/$@ github.com/wailsapp/wails/v2/cmd/wails

frontend/node_modules/.package-lock.json: frontend/package-lock.json
	@echo "==> npm ci: the dashboard's packages into frontend/node_modules (once; about a minute)"
	cd frontend && $(NPM_CI)
	@touch $@

.ci/e2e/node_modules/.package-lock.json: .ci/e2e/package-lock.json
	cd .ci/e2e && $(NPM_CI)
	@touch $@

.ci/clis/node_modules/.package-lock.json: .ci/clis/package-lock.json
	cd .ci/clis && $(NPM_CI)
	@touch $@

.ci/clis-current/node_modules/.package-lock.json: .ci/clis-current/package-lock.json
	cd .ci/clis-current && $(NPM_CI)
	@touch $@

# --- builds ------------------------------------------------------------------

build: $(WAILS_DEP)
	@echo "==> wails build: the desktop app into build/bin/crosschat-relay (the first build takes a few minutes)"
	$(WAILS) build -tags webkit2_41 -trimpath -ldflags "$(LDFLAGS)"

# The TypeScript wrappers and models of the bound Go services (frontend/wailsjs).
bindings: $(WAILS_DEP)
	$(WAILS) generate module -tags webkit2_41

frontend: frontend/node_modules/.package-lock.json
	@echo "==> npm run build: the dashboard into frontend/dist (type-check, then bundle: about a minute)"
	cd frontend && npm run build

# No build tags: links no gtk/webkit, so it runs on a bare server. It embeds
# the dashboard, so the frontend is built first. No -trimpath, so it reuses
# the packages `go vet` compiled (go-sqlite3's C is the slow part of a cold build).
build-headless: frontend
	@echo "==> go build: the relay into $(HEADLESS) (the first build compiles SQLite's C code: a few minutes with no output; later builds take seconds)"
	go build -ldflags "$(LDFLAGS)" -o $(HEADLESS) .

# The headless build on PATH, so the README's commands and the Claude Code
# plugin (its hook and MCP server run `crosschat-relay` by name) work from
# a checkout. PREFIX=/usr/local (or BINDIR=...) installs elsewhere.
install: build-headless
	@bash build/install.sh $(HEADLESS) $(BINDIR)

run: install
	@echo "==> crosschat-relay serve $(RUN_ARGS)"
	$(HEADLESS) serve $(RUN_ARGS)

# --- tests -------------------------------------------------------------------

test: deps vet test-go fuzz-ci test-desktop test-frontend e2e

# System packages the tests need besides Go, gcc and node (installed as root,
# or named for you to install).
deps:
	bash .ci/deps.sh chromium dbus dbus-daemon systemd libglib2.0-bin

vet: .ci/bin/staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: not formatted (run gofmt -w on them):"; echo "$$out"; exit 1; fi
	go vet ./...
	.ci/bin/staticcheck ./...

# macOS, as far as Linux allows: every package vetted (so compiled, the
# darwin-only files and the tests included) with GOOS=darwin and no cgo.
# Test files that need cgo (go-sqlite3's constants) say so with a build tag.
vet-darwin:
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 go vet ./...

# Windows the same way, in both forms a Windows build takes: with mingw cgo
# (as .ci/windows.sh builds the tests and build/dist.sh the exe) and without
# cgo (plain GOOS=windows). .ci/windows.sh runs it after compiling its test
# binaries with -trimpath: with the same flag the cgo form reuses what that
# compiled (SQLite's C above all) instead of building it again.
vet-windows:
	GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc go vet -trimpath ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go vet -trimpath ./...

# staticcheck, pinned, built from the Go module proxy into .ci/bin.
.ci/bin/staticcheck:
	@mkdir -p $(@D)
	GOBIN=$(CURDIR)/.ci/bin go install honnef.co/go/tools/cmd/staticcheck@v0.8.2

test-go:
	go test -race -count=1 ./...

# The tray and OS notifications on a private D-Bus session bus: the tray's
# StatusNotifierItem and menu, a Notify call captured by a fake
# notifications service, Open and Quit clicked over D-Bus.
test-desktop:
	dbus-run-session -- env CROSSCHAT_REQUIRE_DBUS=1 go test -race -count=1 -run 'TestPresenceOverDBus|TestRevealFileManager1|TestNotifyBodyMarkup' ./app/shell/ ./internal/desktop/

test-frontend: frontend/node_modules/.package-lock.json
	cd frontend && npm test && npm run typecheck

e2e: e2e-mcp e2e-dashboard e2e-clis e2e-mesh

# Real MCP clients: the Inspector CLI and the TypeScript SDK (.ci/e2e).
e2e-mcp: build-headless .ci/e2e/node_modules/.package-lock.json
	bash .ci/e2e/run.sh $(HEADLESS)

# The dashboard in Debian's Chromium (playwright-core); screenshots in .ci/out/dashboard.
# Then accessibility (e2e/a11y.mjs): axe-core's WCAG 2.0/2.1 A and AA rules on
# every page and dialog in light and dark, a keyboard-only scenario, 1024×700
# and 200 % zoom; its screenshots (a11y-*.png: focus ring, a dialog holding
# the focus, 200 % zoom) go to the same folder.
e2e-dashboard: build-headless frontend/node_modules/.package-lock.json
	cd frontend && node e2e/dashboard.mjs $(CURDIR)/$(HEADLESS) $(CURDIR)/.ci/out/dashboard
	cd frontend && node e2e/a11y.mjs $(CURDIR)/$(HEADLESS) $(CURDIR)/.ci/out/dashboard

# The real Claude Code, Codex and Gemini CLIs run as relay workers against a
# scripted fake model on loopback (internal/e2e), and Claude Code runs
# interactive in tmux with the channel server (TestClaudeChannelLive) and with
# the repository's plugin installed (TestClaudePlugin), and
# `crosschat-relay claude-plugin` installs the embedded plugin into it
# (TestClaudePluginVerb, matched by the same name); the variable is set here
# only, so test-go does not run them twice.
# Two lanes, each pinned in its own package file: .ci/clis keeps the oldest
# versions we support, .ci/clis-current the newest ones the tests pass with
# (docs/live-sessions.md says how to move that pin). The test binary is
# built once and run against each lane in turn.
E2E_CLIS_RUN := -run 'TestRealCLIs|TestSessionWorkers|TestExactSessions|TestClaudeChannelLive|TestClaudePlugin'
E2E_CLIS_TEST = CROSSCHAT_E2E_CLIS=$(1) go test -race -count=1 -v $(E2E_CLIS_RUN) -timeout 15m ./internal/e2e/

e2e-clis: e2e-clis-oldest e2e-clis-current

e2e-clis-oldest: .ci/clis/node_modules/.package-lock.json
	$(call E2E_CLIS_TEST,$(CURDIR)/.ci/clis/node_modules/.bin)

e2e-clis-current: .ci/clis-current/node_modules/.package-lock.json
	$(call E2E_CLIS_TEST,$(CURDIR)/.ci/clis-current/node_modules/.bin)

# Whatever the registry serves now, installed into a scratch folder: finds
# the next break before users do. Not part of make test (unpinned).
E2E_CLIS_LATEST ?= $(CURDIR)/.ci/out/clis-latest
e2e-clis-latest:
	rm -rf $(E2E_CLIS_LATEST) && mkdir -p $(E2E_CLIS_LATEST)
	cd $(E2E_CLIS_LATEST) && npm init -y >/dev/null && \
	  npm install --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code@latest @openai/codex@latest @google/gemini-cli@latest
	@cd $(E2E_CLIS_LATEST) && for p in claude codex gemini; do echo "$$p: $$(node_modules/.bin/$$p --version 2>&1 | head -n1)"; done
	$(call E2E_CLIS_TEST,$(E2E_CLIS_LATEST)/node_modules/.bin)

# The mesh with real processes (internal/e2e): a three-node JetStream cluster
# (nats-server built from the Go module go.mod pins) and three relays on
# loopback; then SIGKILL of a relay, one NATS node stopped, a relay cut off
# from NATS for 60 s through a TCP proxy, all of NATS restarted; and the
# default flow: an embedded server with its credential, `mesh invite`, a task
# held until `mesh trust`, the operator's task across relays; and an invited neighbour confined to its own subjects.
e2e-mesh:
	CROSSCHAT_E2E_MESH=1 go test -count=1 -v -run 'TestMeshEndToEnd|TestMeshDefaultOperatorEndToEnd|TestMeshNeighbourEndToEnd' -timeout 10m ./internal/e2e/

# Each Fuzz target runs alone for $(FUZZTIME); packages are found by grep.
fuzz:
	@found=0; \
	for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . --exclude-dir=node_modules --exclude-dir=.git --exclude-dir=build | xargs -r -n1 dirname | sort -u); do \
	  for f in $$(go test -list '^Fuzz' "$$dir" | grep '^Fuzz'); do \
	    found=$$((found+1)); echo "--- $$dir $$f ($(FUZZTIME))"; \
	    go test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) "$$dir"; \
	  done; \
	done; \
	echo "fuzz: $$found target(s) run"

# The short fuzz run of make test: every target crossing a trust boundary
# (MCP and bridge arguments, enroll bodies, .env files, stream parsers).
# It counts executions instead of seconds: with a duration, Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded" when
# the deadline falls while a starved worker is mid-call (go.dev/issue/75804,
# fixed in Go 1.27), which a loaded CI machine hits.
fuzz-ci:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=10000x

bench:
	go test -run '^$$' -bench . -benchmem ./...

# --- release packages --------------------------------------------------------

dist:
	bash build/dist.sh $(DIST_ARGS)

dist-check:
	bash .ci/dist-check.sh $(DIST_ARGS)

# Windows under wine (installs wine as root): the Windows unit tests and the
# installer build/dist.sh made. WINDOWS_ARGS=--unit-only skips the installer.
windows-check:
	bash .ci/windows.sh $(WINDOWS_ARGS)

# --- housekeeping ------------------------------------------------------------

clean:
	rm -rf build/bin build/dist .ci/out
	find frontend/dist -mindepth 1 ! -name .gitkeep -exec rm -rf {} +

distclean: clean
	rm -rf .ci/bin frontend/node_modules .ci/e2e/node_modules .ci/clis/node_modules .ci/clis-current/node_modules
