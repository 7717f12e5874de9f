#!/usr/bin/env bash
# Install what the tests need, then lint and run the whole test suite. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
export PATH="$PWD/.venv/bin:$PATH"  # the Go toolchain install.sh chose

.venv/bin/ruff check bridgebench tests evidence scripts studies
.venv/bin/lint-imports  # the layers of pyproject.toml: every import points down
# Go modules: vet, formatting, tests (extra build tags where a module has optional cgo parts).
for module in probes/go bridgebench/loadtest/driver evidence/hello studies/udf-trim/go studies/plugin-call/go \
              studies/openapi-validate/go studies/nginx-logagg/collector; do
  (cd "$module" && go vet ./... && test -z "$(gofmt -l .)" && go test ./...)
done
# The wasip1 guests are built for another GOOS: vet them as such.
(cd studies/udf-trim/go && GOOS=wasip1 GOARCH=wasm go vet ./wasm/guest)
(cd studies/plugin-call/go && GOOS=wasip1 GOARCH=wasm go vet ./wasm/guest ./servers/extismplugin)
# udf-trim's cgo loaders: LuaJIT and Lua 5.4 cannot link into one binary, so each has its build tag.
for tag in luajit lua54; do
  (cd studies/udf-trim/go && go vet -tags "$tag" ./... && go test -tags "$tag" "./loaders/$tag/..." ./cmd/udfbench)
done
# db-binding's Go mechanism calls GT.M through cgo: vet it with GT.M's headers, in the study's GT.M environment.
(cd studies/db-binding/go && bash ../gtmenv.sh --build ../../../build/db-binding/vet sh -c \
  'export CGO_CFLAGS="-I$gtm_dist" CGO_LDFLAGS="-L$gtm_dist -lgtmshr -Wl,-rpath,$gtm_dist"
   go vet ./... && test -z "$(gofmt -l .)" && go test ./...')
# Three workers, a test file each at a time (a file's tests share its fixtures: a build, a server, a database),
# the longest files first (tests/conftest.py's LONGEST_FIRST, in collection order: hence no reordering). Each
# worker pins its lock-step blocks to a CPU of its own (tests/conftest.py). On 2026-11-29, a slow boot: 6 min
# 49 s with three against 8 min 48 s with two (docs/results.md). A third worker had once found a GT.M shared
# memory segment left behind (1 of 9 rehearsals, 2026-11-27); the rehearsals since watch for it (results.md).
.venv/bin/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder "$@"
