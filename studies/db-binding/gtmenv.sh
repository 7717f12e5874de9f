#!/usr/bin/env bash
# Run a command in the GT.M environment of one mechanism's database: every variable GT.M needs is set here,
# none by the user. Usage: gtmenv.sh BUILD_DIR COMMAND [ARGS...]
set -euo pipefail
mkdir -p "$1"
build=$(readlink -f "$1")
shift
study=$(dirname "$(readlink -f "$0")")
gtm_dist=""
for dir in /usr/lib/*/fis-gtm/V*; do  # Debian's fis-gtm; the newest when several are installed
  [ -x "$dir/mumps" ] && gtm_dist=$dir
done
if [ -z "$gtm_dist" ]; then
  echo "GT.M is not installed (Debian package fis-gtm)" >&2
  exit 3
fi
export gtm_dist
export gtmgbldir="$build/db/bcat.gld"
export gtmroutines="$build/o($study/m) $gtm_dist/libgtmutil.so"
export gtm_tmp="$build/tmp"
export GTMCI="$study/bbci.ci"
export gtm_etrap='write $zstatus,! zhalt 1'  # an M error ends the process with a message and status 1
mkdir -p "$build/o" "$build/tmp"
# A process killed outright (SIGKILL) leaves the database's shared memory and semaphores behind (SIGTERM,
# which bridgebench sends on a timeout, does not): run the database down before using it again.
if [ -f "$build/db/bcat.dat" ]; then
  "$gtm_dist/mupip" rundown -region DEFAULT > /dev/null 2>&1 || true
fi
exec "$@"
