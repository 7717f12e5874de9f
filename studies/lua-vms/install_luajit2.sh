#!/usr/bin/env bash
# OpenResty's luajit2 conflicts with Debian's luajit in apt, so unpack it into the build folder instead
# of installing it: apt-get download + dpkg -x, from Debian's own archive.
set -euo pipefail
dest=$1
mkdir -p "$dest/debs"
cd "$dest/debs"
apt-get download luajit2 libluajit2-5.1-2 libluajit2-5.1-common libluajit2-5.1-dev 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
ls luajit2_*.deb >/dev/null 2>&1 || { echo "apt-get download luajit2 failed (run apt-get update?)" >&2; exit 1; }
for deb in *.deb; do dpkg -x "$deb" "$dest/root"; done
echo "luajit2 $(dpkg-deb -f luajit2_*.deb Version) (OpenResty branch, Debian package)" > "$dest/VERSION"
