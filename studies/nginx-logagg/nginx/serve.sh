#!/usr/bin/env bash
# One nginx for one load run: serve.sh BUILD MODE WORKERS PORT
# MODE: ceiling (return 204, nothing logged: the driver's ceiling), none, file, shared, local, ship
# (lua/bb_logagg.lua says what each counts). Writes nginx.conf into a fresh prefix under BUILD/run, starts
# the collector there for `ship`, runs nginx in the foreground, and on SIGTERM stops both and removes the
# prefix. BB_DICT_SIZE sets the counts' shared dictionary (default 1m, the post's).
set -euo pipefail
build=$1 mode=$2 workers=$3 port=$4
study=$(cd "$(dirname "$0")/.." && pwd)
root=$build/nginx/root
mkdir -p "$build/run"
# A run stopped by SIGKILL could not remove its prefix, nor its sockets' folder: remove those whose nginx is gone.
for old in "$build"/run/nginx-*; do
  [ -d "$old" ] || continue
  pid=$(cat "$old/nginx.pid" 2>/dev/null || true)
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
    [ -f "$old/sockets" ] && rm -rf "$(cat "$old/sockets")"
    rm -rf "$old"
  fi
done
status='200 "ok"' missing='404'
case $mode in
  ceiling) log='' status='204' missing='204' ;;
  none) log='' ;;
  file) log='access_log @PREFIX@/access.log bb buffer=64k flush=100ms;' ;;
  shared) log='log_by_lua_block { require("bb_logagg").count_shared() }' ;;
  local) log='log_by_lua_block { require("bb_logagg").count_local() }' ;;
  ship) log='log_by_lua_block { require("bb_logagg").ship() }' ;;
  *) echo "serve.sh: unknown mode $mode (ceiling, none, file, shared, local, ship)" >&2; exit 2 ;;
esac
prefix=$(mktemp -d "$build/run/nginx-$port-XXXXXX")
chmod 755 "$prefix"  # nginx started by root runs its workers as nobody: they read the access log here
collector=
sockets=$prefix  # ship's sockets' folder; the others have none, and the prefix stands in
if [ "$mode" = ship ]; then
  # The collector's sockets in a folder of their own in /tmp, not in the prefix: a unix socket's path holds at most
  # 107 bytes (a longer one fails to bind, and would overrun the Lua side's sockaddr), and the build folder lies
  # wherever the repository was cloned; nor in TMPDIR, which may be private (the harness gives each execution a
  # folder of its own) where the workers, who run as nobody, must reach them. The prefix names the folder, for
  # the sweep above.
  sockets=$(mktemp -d /tmp/bb-logagg-XXXXXX)
  echo "$sockets" > "$prefix/sockets"
  chmod 755 "$sockets"
  "$build/collector" "$sockets/lines.sock" "$sockets/totals.sock" &
  collector=$!
  # Until its socket is there, or it has died (a busy machine may take long to start it: up to a minute).
  for _ in $(seq 1200); do
    [ -S "$sockets/totals.sock" ] || ! kill -0 "$collector" 2>/dev/null && break
    sleep 0.05
  done
  if [ ! -S "$sockets/totals.sock" ]; then
    echo "serve.sh: the collector did not start" >&2
    kill "$collector" 2>/dev/null || true
    rm -rf "$sockets" "$prefix"
    exit 1
  fi
  # nginx started by root runs its workers as nobody: they must reach the collector's sockets.
  chmod 666 "$sockets/lines.sock" "$sockets/totals.sock"
fi
sed -e "s|@LOG@|$log|g" -e "s|@ROOT@|$root|g" -e "s|@PREFIX@|$prefix|g" -e "s|@WORKERS@|$workers|g" \
    -e "s|@STUDY@|$study|g" -e "s|@MODE@|$mode|g" -e "s|@PORT@|$port|g" -e "s|@STATUS@|$status|g" \
    -e "s|@MISSING@|$missing|g" -e "s|@DICT_SIZE@|${BB_DICT_SIZE:-1m}|g" -e "s|@SOCKETS@|$sockets|g" \
    "$study/nginx/nginx.conf.in" > "$prefix/nginx.conf"
export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu
"$root/usr/sbin/nginx" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" &
nginx=$!
finish() {
  if [ -n "$collector" ]; then kill "$collector" 2>/dev/null || true; wait "$collector" 2>/dev/null || true; fi
  rm -rf "$sockets" "$prefix"
}
stop() {
  kill -QUIT "$nginx" 2>/dev/null || true  # graceful: workers finish their requests
  wait "$nginx" || true
  [ -s "$prefix/error.log" ] && tail -5 "$prefix/error.log" >&2
  finish
  exit 0
}
trap stop TERM INT
wait "$nginx" || { status=$?; tail -5 "$prefix/error.log" >&2; finish; exit "$status"; }
finish
