GO ?= go
# Test timeout per package; the whole suite must stay well under 30 minutes on 2 cores.
TEST_TIMEOUT ?= 15m

.PHONY: build test test-short vet fmt bench clean

build:
	$(GO) build -o bin/cairn ./cmd/cairn

# The full suite: unit tests, conformance suites, crash tests, real clients and brokers.
test: build
	$(GO) vet ./...
	$(GO) test -timeout $(TEST_TIMEOUT) -count=1 ./...

test-short:
	$(GO) test -short -count=1 ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
