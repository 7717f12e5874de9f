#!/usr/bin/env bash
# Build the nodem mechanism (inside gtmenv.sh --build): nodem from npm, its C++ addon compiled against GT.M
# with node-gyp (npm's own, else Debian's node-gyp) and Node.js's headers, and its M routine compiled.
# Its install script is skipped (it only builds the addon, and cannot find GT.M). Usage: build.sh BUILD_DIR
set -euo pipefail
build=$1
version=0.20.9  # nodem, pinned
[ -f /usr/include/node/node.h ] || { echo "Node.js headers not found in /usr/include/node (Debian: libnode-dev)" >&2; exit 1; }
gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
if [ ! -f "$gyp" ]; then
  gyp=$(command -v node-gyp || true)
  [ -n "$gyp" ] || { echo "node-gyp not found (neither npm's own nor Debian's node-gyp)" >&2; exit 1; }
fi
rm -rf "$build/nodem"
mkdir -p "$build/nodem/o"
npm install --prefix "$build/nodem" --ignore-scripts --no-audit --no-fund --no-save "nodem@$version" \
  > "$build/nodem/npm.log" 2>&1 || { echo "npm install nodem@$version failed: see $build/nodem/npm.log" >&2; exit 1; }
addon="$build/nodem/node_modules/nodem"
(cd "$addon" && node "$gyp" rebuild -j1 --nodedir=/usr) > "$build/nodem/gyp.log" 2>&1 \
  || { echo "node-gyp could not build nodem against GT.M: see $build/nodem/gyp.log" >&2; exit 1; }
# v4wNode.m has lines for YottaDB only; GT.M reports them and compiles the rest.
(cd "$build/nodem/o" && "$gtm_dist/mumps" "$addon/src/v4wNode.m") > "$build/nodem/mumps.log" 2>&1 || true
[ -f "$build/nodem/o/v4wNode.o" ] || { echo "GT.M could not compile nodem's v4wNode.m: see $build/nodem/mumps.log" >&2; exit 1; }
