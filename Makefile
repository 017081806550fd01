# The project's commands in one place. CI runs `make check` (= .ci/run).
.PHONY: test check lint fuzz race packages image

test: ## the README's test command
	go test ./...

check: ## everything CI runs, as CI runs it
	bash .ci/run

lint: ## formatting and vet, as CI checks them
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./...

race: ## the race detector over every package
	go test -race ./...

fuzz: ## every fuzz target for FUZZTIME (default 10s) each
	.ci/fuzz.sh

packages: ## the release binaries, wheels and npm packages for VERSION (e.g. make packages VERSION=v0.2.0)
	scripts/release.sh $(VERSION)
	go run ./scripts/package -tag $(VERSION)

image: ## the OCI image tar, without Docker
	scripts/image.sh $(VERSION)
