#!/usr/bin/env bash
# Build LuaJIT from Debian's own source package (the version Debian 12 ships), in one of the study's
# variants, into a folder shared by the mechanisms that use it:
#   build_luajit.sh SHARED VARIANT
#   VARIANT: stock           the source as Debian builds it (make amalg), nothing changed
#            fixedseed       LUAJIT_SECURITY_PRNG=0: the VM's PRNG gets a fixed seed instead of getrandom's
#                            (trace-abort penalties, string hash seeds and IDs, the machine-code area's place)
#            hotcount        hotcount.patch: 4096 hot counters instead of 64, so loops rarely share one
#            hotcount-fixedseed  both
# The source comes through apt with a deb-src list of the study's own (the machine's apt configuration is
# not touched). BRIDGEBENCH_DEBIAN_MIRROR overrides the archive (tests point it at an empty folder to see
# the failure). On success SHARED/VARIANT/luajit is the interpreter and SHARED/VARIANT/VERSION says what it is.
set -euo pipefail
shared=$1 variant=$2
here=$(cd "$(dirname "$0")" && pwd)
case "$variant" in
  stock) patch=no; xcflags="" ;;
  fixedseed) patch=no; xcflags="-DLUAJIT_SECURITY_PRNG=0" ;;
  hotcount) patch=yes; xcflags="" ;;
  hotcount-fixedseed) patch=yes; xcflags="-DLUAJIT_SECURITY_PRNG=0" ;;
  *) echo "build_luajit.sh: unknown variant '$variant' (stock, fixedseed, hotcount, hotcount-fixedseed)" >&2; exit 2 ;;
esac
mirror=${BRIDGEBENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$shared"
shared=$(cd "$shared" && pwd)
out="$shared/$variant"
stamp="$variant $xcflags $(cat "$here/build_luajit.sh" "$here/hotcount.patch" | sha256sum | cut -c1-16) $mirror"
if [ -x "$out/luajit" ] && [ "$(cat "$out/STAMP" 2>/dev/null)" = "$stamp" ]; then
  exit 0  # built already, the same way
fi

# One fetch of the source for every variant, under a lock (mechanisms may build one after another).
exec 9>"$shared/.lock"
flock 9
if [ ! -f "$shared/source/STAMP" ] || [ "$(cat "$shared/source/STAMP")" != "$mirror" ]; then
  rm -rf "$shared/source" "$shared/apt"
  mkdir -p "$shared/apt/lists/partial" "$shared/source"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm main" \
    > "$shared/apt/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$shared/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$shared/apt/lists" -o "Dir::Cache=$shared/apt/cache" -q)
  if ! apt-get "${apt_opts[@]}" update > "$shared/apt/update.log" 2>&1 \
     || ! (cd "$shared/source" && apt-get "${apt_opts[@]}" source luajit > "$shared/apt/source.log" 2>&1); then
    why=$(cat "$shared/apt/update.log" "$shared/apt/source.log" 2>/dev/null | grep -E '^(E|W): ' | head -1 || true)
    echo "could not fetch Debian's luajit source package from $mirror: ${why:-apt-get failed}" >&2
    exit 1
  fi
  tree=$(find "$shared/source" -mindepth 1 -maxdepth 1 -type d -name 'luajit-*' | head -1)
  [ -n "$tree" ] || { echo "apt-get source luajit gave no source tree" >&2; exit 1; }
  dpkg-parsechangelog -l "$tree/debian/changelog" -S Version > "$shared/source/VERSION"
  ln -sfn "$tree" "$shared/source/tree"
  echo "$mirror" > "$shared/source/STAMP"
fi

rm -rf "$out"
mkdir -p "$out"
cp -a "$shared/source/tree/." "$out/tree"
if [ "$patch" = yes ]; then
  patch -s -d "$out/tree" -p1 < "$here/hotcount.patch"
fi
# Debian's own build step (debian/rules): make amalg, with two jobs (the machine has two cores). The build
# folder's path is mapped away from the debugging information, so that the same variant built anywhere is
# the same binary, byte for byte. BUILDMODE=static leaves out the shared library, which nothing here uses and
# whose second compile of the whole amalgamation took as long as the first: the interpreter is the one the
# default mixed mode links, byte for byte (this script before and after, stock and hotcount-fixedseed, 2026-11-27).
make -s -C "$out/tree" -j2 amalg BUILDMODE=static PREFIX=/usr XCFLAGS="$xcflags" \
  CFLAGS="-ffile-prefix-map=$out/tree=luajit" \
  Q= E=@: > "$out/build.log" 2>&1 \
  || { echo "make amalg failed for $variant: $(tail -1 "$out/build.log")" >&2; exit 1; }
cp "$out/tree/src/luajit" "$out/luajit"
echo "LuaJIT $(cat "$shared/source/VERSION") from Debian's source, $variant${xcflags:+ ($xcflags)}" > "$out/VERSION"
echo "$stamp" > "$out/STAMP"
