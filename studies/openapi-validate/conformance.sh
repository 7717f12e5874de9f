#!/usr/bin/env bash
# The Lua validator against the official JSON-Schema-Test-Suite, draft 4: the suite as PyPI's jsonschema
# 4.26.0 source distribution ships it (json/tests, json/remotes), the draft 4 metaschema from
# jsonschema-specifications 2025.9.1's; both downloaded once from PyPI into BUILD/suite, nothing else fetched.
#   conformance.sh BUILD [LUA] [FILE.json ...]     (default: luajit, every required draft 4 file)
# Prints the failures, then one JSON line with the pass counts per file. PYTHON: the python to fetch with.
set -euo pipefail
build=$1 lua=${2:-luajit}
shift $(( $# < 2 ? $# : 2 ))
here=$(cd "$(dirname "$0")" && pwd)
suite=$build/suite
if [ ! -f "$suite/done" ]; then
  rm -rf "$suite" && mkdir -p "$suite"
  # The source distributions straight from PyPI (pip download would build their build tools from source
  # to read metadata we do not need), each checked against the sha256 PyPI publishes for it.
  "${PYTHON:-python3}" - "$suite" <<'PY'
import hashlib, re, sys, urllib.request
folder = sys.argv[1]
for name, filename in (("jsonschema", "jsonschema-4.26.0.tar.gz"),
                       ("jsonschema-specifications", "jsonschema_specifications-2025.9.1.tar.gz")):
    with urllib.request.urlopen(f"https://pypi.org/simple/{name}/", timeout=60) as reply:
        index = reply.read().decode()
    found = re.search(r'href="([^"#]*/' + re.escape(filename) + r')#sha256=([0-9a-f]{64})"', index)
    if not found:
        sys.exit(f"{filename}: not in PyPI's index")
    with urllib.request.urlopen(found.group(1), timeout=120) as reply:
        data = reply.read()
    if hashlib.sha256(data).hexdigest() != found.group(2):
        sys.exit(f"{filename}: sha256 differs from PyPI's")
    with open(f"{folder}/{filename}", "wb") as out:
        out.write(data)
PY
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
