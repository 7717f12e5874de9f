#!/usr/bin/env bash
# Cap'n Proto for the study, into OUT: Lua modules generated from schema/*.capnp by capnpc_lua.py
# (OUT/lua/<name>_capnp.lua), and libcapnp behind the C face of shim/bbcapnp.h (OUT/libbbcapnp.so).
# Usage: build_capnp.sh OUT
# Several mechanisms share one OUT ({build}/../_capnp): it is built once, under a lock, and stamped with a hash
# of what made it; a later call with the same inputs returns at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build_capnp.sh OUT}
mkdir -p "$out"
exec 9>"$out.lock"
flock 9
stamp=$(cat "$here"/schema/*.capnp "$here/capnpc_lua.py" "$here"/shim/* "$0" | sha256sum | cut -c1-16)
stamp="$stamp $(capnp --version) $(c++ --version | head -1)"
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ]; then
  exit 0
fi
rm -rf "$out/lua" "$out/cxx" "$out/libbbcapnp.so" "$out/stamp"
mkdir -p "$out/lua" "$out/cxx"
schemas=("$here"/schema/*.capnp)
capnp compile -o- --src-prefix="$here/schema" "${schemas[@]}" | python3 "$here/capnpc_lua.py" "$out/lua"
capnp compile -oc++:"$out/cxx" --src-prefix="$here/schema" "${schemas[@]}"
c++ -std=c++17 -O2 -Wall -Wextra -shared -fPIC -I"$out/cxx" -I"$here/shim" "$here/shim/bbcapnp.c++" \
  "$out"/cxx/*.capnp.c++ -lcapnp -lkj -o "$out/libbbcapnp.so"
echo "$stamp" > "$out/stamp"
