# aa-grade: `make run` shows the main job on the embedded default, `make test` is what CI runs.
SHELL       := /bin/bash
GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# errcheck, bodyclose and lll, as .golangci.yml sets them (built from the Go module proxy on first
# use: minutes; cached after).
GOLANGCI    ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
BIN         := bin/aa-grade
# Every platform aa-grade builds for; the sandbox backends run on Linux only (doctor says so
# elsewhere).
PLATFORMS   := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

.PHONY: build dist cross run test unit unprivileged lint bench clean

# One static binary (no cgo), as users download it.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -o $(BIN) ./cmd/aa-grade

# Static binaries for every platform, with their sha256 sums, in dist/.
dist:
	@rm -rf dist && mkdir -p dist && \
	  for p in $(PLATFORMS); do \
	    os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	    echo "dist/aa-grade-$$os-$$arch$$ext"; \
	    CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=auto -o dist/aa-grade-$$os-$$arch$$ext ./cmd/aa-grade || exit 1; \
	  done && cd dist && sha256sum aa-grade-* > SHA256SUMS && cat SHA256SUMS

# Build and vet every platform (what runs only on Linux sits behind build tags).
cross:
	@for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; echo "cross: $$os/$$arch"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -o /dev/null ./... || exit 1; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) vet ./... || exit 1; \
	done

# The main job on the embedded default: builtin/baseline over the demo dataset, offline, in
# the strongest sandbox here, into a fresh runs/demo-baseline.
run: build
	rm -rf runs/demo-baseline
	./$(BIN) run --dataset demo --model builtin/baseline --out runs/demo-baseline

# Lint (every platform builds and vets), then every test with the race detector.
test: lint cross unit

unit:
	$(GO) test -race -count=1 -timeout 45m ./...
	@if [ -n "$$AA_GRADE_TEST_USER" ]; then $(MAKE) --no-print-directory unprivileged; fi

# The sandbox suite and the finish tool's tests again as the unprivileged user
# AA_GRADE_TEST_USER (needs root to switch; .ci/run creates the user): proves the sandbox
# needs no root, and runs the fork bomb case, which only binds a user other than root. The
# test binaries are static, as aa-grade is, so the tests that run them over an empty root run.
unprivileged:
	@dir=$$(mktemp -d) && chmod 755 $$dir && status=0 && \
	  for t in harness/episode/sandbox:. harness/episode/sandbox/wire:. harness/episode/loop:TestFinish harness/vocab/runfolder:TestCheckWritable; do \
	    pkg=$${t%:*}; run=$${t#*:}; bin=$$dir/$$(basename $$pkg).test; \
	    CGO_ENABLED=0 $(GO) test -c -o $$bin ./$$pkg && chmod 755 $$bin && \
	    su "$$AA_GRADE_TEST_USER" -s /bin/bash -c "cd $$dir && CI=$$CI $$bin -test.v -test.run '$$run'" 2>&1 | grep -E '^(=== RUN|\s*--- |PASS|FAIL|ok)|_test.go:' ; \
	    [ $${PIPESTATUS[0]} -eq 0 ] || status=1; \
	  done; rm -rf $$dir; exit $$status

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt: not formatted: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GOLANGCI) run ./...

# Go benchmarks (time and allocations) and whole-command timings; figures in docs/benchmarks.md.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...
	@echo "--- whole command: aa-grade grade on the sample (20 runs)"
	@start=$$(date +%s%N); for i in $$(seq 20); do ./$(BIN) grade --dataset testdata/grade/dataset testdata/grade/submissions >/dev/null; done; \
	  end=$$(date +%s%N); echo "mean wall time: $$(( (end - start) / 20000000 )) ms"
	@echo "--- whole command: aa-grade data pull against curl, 1 GiB from the local fake Hub"
	$(GO) run ./internal/devtools/pullbench -aa-grade $(BIN) 2>/dev/null
	@echo "--- whole file: snapshot.TSVReader against encoding/csv and Python's csv module"
	$(GO) run ./internal/devtools/tsvbench -size-mb 200
	@echo "--- pacing to a provider's rate limits: an hour of calls against a fake provider, in fake time"
	$(GO) test ./harness/models/provider -run '^TestPacingBenchmark$$' -v -count=1 -pacing
	@echo "--- whole command: aa-grade run over the demo (every task x 3 repeats, 30 turns each) against a zero-latency model"
	$(GO) run ./internal/devtools/runbench -aa-grade $(BIN) -parallel 1,4,32 2>/dev/null

clean:
	rm -rf bin dist
