#!/usr/bin/env bash
# Builds otc and runs the whole test suite: a warnings-as-errors build, then the same suite
# under AddressSanitizer + UndefinedBehaviorSanitizer. Usage: scripts/test.sh [--quick]
# (--quick skips the sanitizer pass).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=$(nproc)
run_suite() {
  local dir=$1; shift
  cmake -S . -B "$dir" -DOTC_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  (cd "$dir" && ctest -j "$jobs" --output-on-failure --timeout 600)
}

echo "== tests (Release, -Werror)"
run_suite build/test -DCMAKE_BUILD_TYPE=Release
if [[ "${1:-}" != "--quick" ]]; then
  echo "== tests under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_suite build/sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOTC_SANITIZE=ON -DOTC_FUZZ=OFF
fi
