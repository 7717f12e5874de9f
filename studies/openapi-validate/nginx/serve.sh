#!/usr/bin/env bash
# One nginx for one load run: serve.sh BUILD MODE WORKERS PORT [--go-in-master]
# writes nginx.conf into a fresh prefix under BUILD/run (temp paths and logs live there), runs nginx in
# the foreground, and on SIGTERM stops it and removes the prefix. --go-in-master loads the Go library in
# init_by_lua, before fork: the mistake the negative test shows hanging the workers.
set -euo pipefail
build=$1 mode=$2 workers=$3 port=$4 extra=${5:-}
study=$(cd "$(dirname "$0")/.." && pwd)
root=$build/nginx/root
mkdir -p "$build/run"
# A run stopped by SIGKILL (a hung worker outlived the grace period) could not remove its prefix: remove
# those whose nginx is gone.
for old in "$build"/run/nginx-*; do
  [ -d "$old" ] || continue
  pid=$(cat "$old/nginx.pid" 2>/dev/null || true)
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then rm -rf "$old"; fi
done
prefix=$(mktemp -d "$build/run/nginx-$port-XXXXXX")
init_extra=""
if [ "$extra" = "--go-in-master" ]; then
  init_extra="require(\"bb_nginx\").init_go_in_master(\"$build/libbbopenapi.so\", \"$study/spec/openapi.json\")"
fi
sed -e "s|@ROOT@|$root|g" -e "s|@PREFIX@|$prefix|g" -e "s|@WORKERS@|$workers|g" -e "s|@STUDY@|$study|g" \
    -e "s|@MODE@|$mode|g" -e "s|@SPEC@|$study/spec/openapi.json|g" -e "s|@LIB@|$build/libbbopenapi.so|g" \
    -e "s|@PORT@|$port|g" -e "s|@INIT_EXTRA@|$init_extra|g" "$study/nginx/nginx.conf.in" > "$prefix/nginx.conf"
export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu
export GOMAXPROCS=${GOMAXPROCS:-1}
"$root/usr/sbin/nginx" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" &
nginx=$!
stop() {
  kill -QUIT "$nginx" 2>/dev/null || true  # graceful: workers finish their requests
  wait "$nginx" || true
  [ -s "$prefix/error.log" ] && tail -5 "$prefix/error.log" >&2
  rm -rf "$prefix"
  exit 0
}
trap stop TERM INT
wait "$nginx" || { status=$?; tail -5 "$prefix/error.log" >&2; rm -rf "$prefix"; exit "$status"; }
rm -rf "$prefix"
