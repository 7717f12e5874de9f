#!/usr/bin/env bash
# A mechanism whose Go module could not be fetched when the study was written: try again at every build,
# so the reason shown is what the Go module proxy says today, and a change is noticed.
# Usage: try_module.sh MODULE
set -uo pipefail
module=$1
out=$(GOFLAGS=-mod=mod go mod download -json "$module@latest" 2>&1)
if [ $? -ne 0 ]; then
  reason=$(printf '%s' "$out" | grep -oE '[0-9]{3} [A-Za-z ]+|server response: [^"\\]*' | head -2 | tr '\n' ' ')
  echo "the Go module proxy does not serve $module: ${reason:-$(printf '%s' "$out" | tail -1)}" >&2
  exit 1
fi
echo "$module can be fetched now, but its loader is not written yet: add it to the study" >&2
exit 1
