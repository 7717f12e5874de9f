#!/usr/bin/env bash
# The Lua validator against the official JSON-Schema-Test-Suite, draft 4: the suite as PyPI's jsonschema
# 4.26.0 source distribution ships it (json/tests, json/remotes), the draft 4 metaschema from
# jsonschema-specifications 2025.9.1's; both downloaded once into BUILD/suite, nothing else fetched.
#   conformance.sh BUILD [LUA] [FILE.json ...]     (default: luajit, every required draft 4 file)
# Prints the failures, then one JSON line with the pass counts per file. PYTHON: a python with pip.
set -euo pipefail
build=$1 lua=${2:-luajit}
shift $(( $# < 2 ? $# : 2 ))
here=$(cd "$(dirname "$0")" && pwd)
suite=$build/suite
if [ ! -f "$suite/done" ]; then
  rm -rf "$suite" && mkdir -p "$suite"
  "${PYTHON:-python3}" -m pip download --quiet --no-deps --no-binary :all: -d "$suite" \
    jsonschema==4.26.0 jsonschema-specifications==2025.9.1 >&2
  tar -xzf "$suite"/jsonschema-4.26.0.tar.gz -C "$suite"
  tar -xzf "$suite"/jsonschema_specifications-2025.9.1.tar.gz -C "$suite"
  touch "$suite/done"
fi
tests=$suite/jsonschema-4.26.0/json/tests/draft4
remotes=$suite/jsonschema-4.26.0/json/remotes
metaschema=$suite/jsonschema_specifications-2025.9.1/jsonschema_specifications/schemas/draft4/metaschema.json
if [ $# -eq 0 ]; then
  set -- $(cd "$tests" && ls ./*.json | sed 's|^\./||')
fi
exec "$lua" "$here/lua/conformance.lua" "$tests" "$remotes" "$metaschema" "$@"
