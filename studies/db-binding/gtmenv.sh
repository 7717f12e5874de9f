#!/usr/bin/env bash
# Run a command in the GT.M environment of one mechanism's database: every variable GT.M needs is set here,
# none by the user. Usage: gtmenv.sh [--build] BUILD_DIR COMMAND [ARGS...]
# Without --build (which the build steps and version commands give), the database must exist and be GT.M's:
# a missing or damaged one is a one-line error naming the file and the fix.
set -euo pipefail
building=""
if [ "${1:-}" = "--build" ]; then
  building=1
  shift
fi
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
# which bridgebench sends first whenever it stops a benchmark, does not): run the database down
# before using it again.
dat="$build/db/bcat.dat"
fix="remove $build and run bridgebench again: its build makes a new one"
if [ -z "$building" ]; then
  for file in "$build/db/bcat.gld" "$dat"; do
    if [ ! -f "$file" ]; then
      echo "db-binding: the database file $file is missing; $fix" >&2
      exit 3
    fi
  done
  if [ "$(head -c 9 "$dat" | tr -d '\0')" != "GDSDYNUNX" ]; then
    echo "db-binding: $dat is not a GT.M database (its header is damaged); $fix" >&2
    exit 3
  fi
fi
if [ -f "$dat" ]; then
  if ! out=$("$gtm_dist/mupip" rundown -region DEFAULT 2>&1); then
    echo "db-binding: $dat cannot be run down ($(echo "$out" | grep -m1 -- '-E-' || echo "$out" | head -1)); $fix" >&2
    exit 3
  fi
fi
exec "$@"
