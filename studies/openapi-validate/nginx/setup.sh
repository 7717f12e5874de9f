#!/usr/bin/env bash
# nginx with the Lua module, unpacked into the build folder, never installed: the module needs OpenResty's
# luajit2, which apt would put in place of the Debian luajit the lua-vms study measures. Debian's own
# packages (apt-get download + dpkg -x); what they are is written to VERSION.
set -euo pipefail
dest=$1
mkdir -p "$dest/debs"
cd "$dest/debs"
packages=(nginx nginx-common libnginx-mod-http-lua libnginx-mod-http-ndk lua-resty-core lua-resty-lrucache luajit2 libluajit2-5.1-dev
          libluajit2-5.1-2 libluajit2-5.1-common)
apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
for p in "${packages[@]}"; do
  ls "${p}"_*.deb >/dev/null 2>&1 || { echo "apt-get download $p failed (run apt-get update?)" >&2; exit 1; }
done
for deb in *.deb; do dpkg -x "$deb" "$dest/root"; done
{
  for p in nginx libnginx-mod-http-lua libluajit2-5.1-2; do
    printf '%s %s; ' "$p" "$(dpkg-deb -f "${p}"_*.deb Version)"
  done
  echo
} > "$dest/VERSION"
