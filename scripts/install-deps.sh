#!/usr/bin/env bash
# Installs the Debian 12 packages otc needs, only those missing; silent when none are.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds python3-torch for bench/)
set -euo pipefail

packages=(
  cmake make gcc pkg-config clang-format
  libopenblas-dev libcjson-dev libinih-dev libgraphviz-dev
  llvm-19-dev clang-19 libclang-rt-19-dev
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-arm-linux-gnueabihf libc6-dev-armhf-cross
  qemu-user valgrind
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "otc: missing packages: ${missing[*]}" >&2
  echo "otc: run this script as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "otc: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
