#!/usr/bin/env bash
# Runs one `otc` command under valgrind: no memory errors and no leaks in otc's own code
# (tests/valgrind.supp names the third-party libraries that keep memory). Exit codes 0-2 of
# otc itself are allowed; valgrind's findings exit 99.
# Usage: valgrind_cli.sh OTC SOURCE_DIR ARGS...
set -u
otc=$1 src=$2; shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
args=()
for a in "$@"; do args+=("${a//@OUT@/$out}"); done
valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
  --suppressions="$src/tests/valgrind.supp" "$otc" "${args[@]}" >"$out/stdout" 2>"$out/stderr"
status=$?
if [[ $status -eq 99 ]]; then
  cat "$out/stderr"
  echo "valgrind found errors or leaks in: otc ${args[*]}"
  exit 1
fi
if [[ $status -gt 2 ]]; then # neither otc's own exit code nor a finding: valgrind did not run
  cat "$out/stderr"
  echo "valgrind or otc failed with exit $status: otc ${args[*]}"
  exit 1
fi
echo "otc ${args[*]} -> exit $status, valgrind clean"
exit 0
