#!/usr/bin/env bash
# Installs the Debian 12 packages otc needs, only those missing; silent when none are.
# Usage: scripts/install-deps.sh [--bench] [--list]
#   --bench  adds PyTorch for bench/torch_compare.py (the demo's last step uses it) and PyPy
#            for neat-python beside CPython (bench/neat_vs_neat_python.sh)
#   --list   prints the table below, one package and its programs a line; installs nothing
set -euo pipefail

# Every package the build, the tests, the demo or the benchmarks need. The programs after a
# package are those they run from it, under the package dpkg -S names as their owner; programs
# of Debian's required packages (bash, dash, coreutils, grep, sed, mawk, findutils, diffutils,
# dpkg, apt) are on every Debian system, even a debootstrap minbase, and are not listed.
# tests/external_programs.sh fails when the sources run a program missing here, or when a
# listed program is not installed from its package. Check a clean machine with
# scripts/check-fresh-machine.sh.
# package                      programs run from it
table=(
  "cmake                       cmake ctest"
  "make                        make"
  "gcc                         gcc cc"
  "binutils                    nm size"
  "pkgconf                     pkg-config"
  "clang-format                clang-format"
  "libopenblas-dev"
  "libgfortran-12-dev"         # static OpenBLAS links -lgfortran (install_tree's static consumer)
  "libcjson-dev"
  "libinih-dev"
  "zlib1g-dev"                  # gzip-compressed IDX image files
  "libprotobuf-c-dev"            # ONNX model files (read and written through protobuf-c)
  "protobuf-c-compiler         protoc-c"
  "libonnx-dev"                  # onnx.proto, compiled to C by protoc-c at build time
  "libonnx-testdata"             # ONNX's node and model tests: the import tests' oracle
  "python3-onnx"                 # onnx.checker and shape inference for exported files
  "python3-numpy"
  "python3-dev"                  # the otc Python package (python/): CPython's headers
  "python3-pytest"               # its tests (tests/python/), run by ctest
  "dataset-fashion-mnist"      # the image example's data (/usr/share/datasets/fashion-mnist)
  "libgraphviz-dev"
  "graphviz                    dot"
  "llvm-19                     llvm-config-19"
  "llvm-19-dev"
  "clang-19                    clang-19"
  "libclang-rt-19-dev"
  "gcc-aarch64-linux-gnu       aarch64-linux-gnu-gcc"
  "libc6-dev-arm64-cross"
  "gcc-arm-linux-gnueabihf     arm-linux-gnueabihf-gcc"
  "libc6-dev-armhf-cross"
  "qemu-user                   qemu-aarch64 qemu-arm"
  "gcc-arm-none-eabi           arm-none-eabi-gcc"  # int8 C for Cortex-M0/M4 (no FPU)
  "libnewlib-arm-none-eabi"      # its C library headers (stdint.h)
  "binutils-arm-none-eabi      arm-none-eabi-nm arm-none-eabi-size"
  "valgrind                    valgrind"
  "procps                      pgrep pkill"
  "groff-base                  groff"
  "man-db                      man"
  "libxml2-utils               xmllint"
  "libopenmpi-dev"
  "openmpi-bin                 mpirun"
  "python3-minimal             python3"
  "python3"
)
bench_table=(
  "python3-torch"
  "pypy3                       pypy3"
)

bench=0 list=0
for arg in "$@"; do
  case $arg in
    --bench) bench=1 ;;
    --list) list=1 ;;
    *) echo "usage: $0 [--bench] [--list]" >&2; exit 2 ;;
  esac
done
[[ $bench -eq 1 ]] && table+=("${bench_table[@]}")
if [[ $list -eq 1 ]]; then
  printf '%s\n' "${table[@]}" | tr -s ' '
  exit 0
fi

missing=()
for row in "${table[@]}"; do
  p=${row%% *}
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
