# The two commands of README.md, and the few around them.
#   make run    install dependencies, build, start hookbox on config.example.yaml
#   make test   install dependencies, build, run every test (unit, integration, interop)
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build run test interop-deps clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	@mkdir -p var
	./$(BUILD)/hookbox serve -c config.example.yaml

# The interop tests sign with the providers' official npm packages, pinned in
# tests/interop/package-lock.json.
interop-deps: deps
	@cd tests/interop && { [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund --loglevel=error; }

test: build interop-deps
	@cd $(BUILD) && ctest --output-on-failure --timeout 600

clean:
	rm -rf $(BUILD)
