#!/usr/bin/env bash
# otc as another project's subdirectory: it configures with the find_package names
# (otc::otc, otc::compiler), and builds none of its tests, benchmarks, examples or fuzzers.
# Usage: subproject_test.sh SOURCE_DIR CMAKE WORK_DIR
set -u
SRC=$1 CMAKE=$2 WORK=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK/app" || fail "cannot make $WORK"
cat >"$WORK/app/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(app C)
add_subdirectory("$SRC" otc)
add_executable(app app.c)
target_link_libraries(app PRIVATE otc::otc otc::compiler)
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE otc::otc_static otc::compiler_static)
CM
printf '#include "otc/otc.h"\nint main(void) { return 0; }\n' >"$WORK/app/app.c"
"$CMAKE" -S "$WORK/app" -B "$WORK/build" >"$WORK/log" 2>&1 || { cat "$WORK/log"; fail "configure"; }
for d in tests bench examples; do
  [ -e "$WORK/build/otc/$d/Makefile" ] && fail "a subproject build generates otc's $d"
done
grep -q "^OTC_WERROR:BOOL=OFF" "$WORK/build/CMakeCache.txt" || fail "-Werror is on in a subproject"
"$CMAKE" --build "$WORK/build" --target help | grep -q '\.\.\. otc_harness' &&
  fail "the test harness is a target of a subproject build"
echo "subproject: configures with otc::otc and otc::compiler; no tests, benchmarks or examples"
