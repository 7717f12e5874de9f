#!/usr/bin/env bash
# Install what bridgebench needs on Debian 12: the Debian packages every study names, and a Python venv
# (.venv) with pinned packages. Safe to run again: it only does what is missing.
#   scripts/install.sh          runtime only
#   scripts/install.sh --fleet  plus a PostgreSQL store's parts (Debian's postgresql, psycopg)
#   scripts/install.sh --dev    plus test and lint tools (and the fleet parts: the tests start a PostgreSQL)
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
fleet=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1; fleet=1 ;;
    --fleet) fleet=1 ;;
    *) echo "usage: scripts/install.sh [--fleet] [--dev]" >&2; exit 2 ;;
  esac
done
as_root=""
[ "$(id -u)" -eq 0 ] || as_root="sudo"
export DEBIAN_FRONTEND=noninteractive

missing() {  # the packages of "$@" that dpkg does not have installed
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

apt_install() {
  local need
  need=$(missing "$@")
  [ -z "$need" ] && return 0
  # Refresh the package lists unless they are recent (luajit2 is also fetched with apt-get download).
  if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -360 2>/dev/null | head -1)" ]; then
    $as_root apt-get update -q
  fi
  echo "installing Debian packages: $need"
  # shellcheck disable=SC2086
  $as_root apt-get install -y -q --no-install-recommends $need
}

# valgrind and libfaketime: instruction counts (`run --metric instructions`, bridgebench/instructions.py)
apt_install python3 python3-venv python3-dev gcc libc6-dev git ca-certificates apt dpkg valgrind libfaketime
# The studies name the rest; reading them needs only the standard library.
study_packages=$(/usr/bin/python3 -m bridgebench.study --debian)
# shellcheck disable=SC2086
apt_install $study_packages
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' 2>/dev/null | head -1)" ]; then
  $as_root apt-get update -q  # apt-get download (luajit2) needs the lists even when nothing is installed
fi

if [ "$dev" = 1 ]; then
  # The tests render the HTML report in a real browser, and read the Go export with the real benchstat.
  apt_install chromium fonts-dejavu-core
fi
if [ "$fleet" = 1 ]; then
  # A PostgreSQL store: the server (the tests start throwaway ones; docs/fleet.md sets up a shared one).
  apt_install postgresql
fi

lock=requirements.lock
[ "$fleet" = 1 ] && lock=requirements-fleet.lock
[ "$dev" = 1 ] && lock=requirements-dev.lock
stamp=.venv/.installed-$(cat requirements*.lock pyproject.toml | sha256sum | cut -c1-16)-$dev-$fleet
if [ ! -f "$stamp" ]; then
  [ -x .venv/bin/python ] || /usr/bin/python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r "$lock"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# Go: the studies need 1.25 or newer (udf-trim's go.mod, for wazero); Debian 12 packages 1.19. When the go on PATH
# is older, fetch the toolchain the way Go itself does, as the module golang.org/toolchain from the Go
# module proxy, and keep it beside the venv (.venv/bin comes first on PATH for study builds).
GO_TOOLCHAIN=go1.26.8
go_new_enough() { "$1" version 2>/dev/null | grep -qE 'go1\.(2[5-9]|[3-9][0-9])([^0-9]|$)'; }
if ! go_new_enough .venv/bin/go && ! { command -v go >/dev/null && go_new_enough go; }; then
  command -v go >/dev/null || apt_install golang-go
  arch=$(dpkg --print-architecture)
  modcache=$(mktemp -d)
  dir=$(GOMODCACHE="$modcache" GOTOOLCHAIN=local GOFLAGS=-mod=mod \
        go mod download -json "golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-$arch" |
        sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] || { echo "could not fetch the Go toolchain $GO_TOOLCHAIN" >&2; exit 1; }
  rm -rf .venv/go && cp -r "$dir" .venv/go
  chmod -R u+w .venv/go "$modcache" && rm -rf "$modcache"
  chmod +x .venv/go/bin/* .venv/go/pkg/tool/*/*  # a module zip keeps no file modes
  ln -sf ../go/bin/go .venv/bin/go
  ln -sf ../go/bin/gofmt .venv/bin/gofmt
fi
export PATH="$PWD/.venv/bin:$PATH"

if [ "$dev" = 1 ] && [ ! -x .venv/bin/benchstat ]; then
  # golang.org/x/perf has no tagged releases: pinned to a pseudo-version the Go module proxy serves.
  GOBIN="$PWD/.venv/bin" GOFLAGS=-mod=mod go install \
    golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da \
    || echo "warning: could not install benchstat; its test will be skipped and say why" >&2
fi
echo "bridgebench installed: .venv/bin/bridgebench"
