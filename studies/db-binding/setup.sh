#!/usr/bin/env bash
# Create a throw-away database under BUILD_DIR/db, fill ^BCAT("lvd",1..N) and verify it (mupip integ).
# Usage: setup.sh BUILD_DIR N        (run inside gtmenv.sh)
set -euo pipefail
build=$1
n=$2
rm -rf "$build/db"
mkdir -p "$build/db"
# GDE takes one qualifier per line reliably.
"$gtm_dist/mumps" -run GDE > "$build/db/gde.log" 2>&1 <<GDE
change -segment DEFAULT -file_name=$build/db/bcat.dat
change -segment DEFAULT -allocation=20000
change -region DEFAULT -key_size=255
exit
GDE
"$gtm_dist/mupip" create > "$build/db/create.log" 2>&1
"$gtm_dist/mumps" -run fill^bbfill "$n"
"$gtm_dist/mupip" integ -region DEFAULT > "$build/db/integ.log" 2>&1 || {
  echo "mupip integ found errors in the new database: see $build/db/integ.log" >&2
  exit 1
}
"$gtm_dist/mupip" rundown -region DEFAULT > /dev/null 2>&1 || true
