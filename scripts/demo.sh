#!/usr/bin/env bash
# The main job: install what is missing, build otc in Release, then run the examples.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh "$@"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" >/dev/null
bin=build/release

echo "== examples (interpreter)"
for ex in xor sine iris; do
  "$bin/examples/example_$ex"
done
