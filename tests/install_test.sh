#!/bin/bash
# `cmake --install` into a temporary prefix, then use the installed tree the way a user would:
# the layout, the otc command (version, man page, the LLVM plugin loaded only on use, a clear
# error without it), and a C program built against it with pkg-config (shared and static)
# and with find_package(otc) (shared and static, runtime and compiler).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR LIBDIR VERSION CMAKE C_COMPILER HAVE_JIT [CFLAGS]
set -u
BUILD=$1 SRC=$2 LIBDIR=$3 VERSION=$4 CMAKE=$5 CC=$6 HAVE_JIT=$7 CFLAGS=${8:-}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
P=$WORK/prefix L=$WORK/prefix/$LIBDIR
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { "$@" >"$WORK/out" 2>"$WORK/err" || fail "$*: $(head -c 600 "$WORK/err")"; }

run "$CMAKE" --install "$BUILD" --prefix "$P"

# The layout.
files=(bin/otc share/man/man1/otc.1 include/otc/otc.h include/otc/version.h include/otc/jit.h
       include/otc/compiler.h include/otc/random_graph.h
       "$LIBDIR/libotc.a" "$LIBDIR/libotc.so" "$LIBDIR/libotc_compiler.a"
       "$LIBDIR/libotc_compiler.so" "$LIBDIR/pkgconfig/otc.pc" "$LIBDIR/pkgconfig/otc-compiler.pc"
       "$LIBDIR/cmake/otc/otcConfig.cmake" "$LIBDIR/cmake/otc/otcConfigVersion.cmake"
       "$LIBDIR/cmake/otc/otcTargets.cmake")
[ "$HAVE_JIT" = 1 ] && files+=("$LIBDIR/libotc_llvm.so")
for f in "${files[@]}"; do [ -e "$P/$f" ] || fail "not installed: $f"; done

# The command runs from the prefix without LD_LIBRARY_PATH (its RPATH finds lib/).
run env -u LD_LIBRARY_PATH "$P/bin/otc" --version
[ "$(cat "$WORK/out")" = "otc $VERSION" ] || fail "--version printed '$(cat "$WORK/out")'"
# Nothing that only reads a model loads libLLVM (start-up); a compile does, from the prefix.
MODEL=$SRC/examples/models/iris_mlp.otm
for args in "--help" "summary $MODEL" "run --help"; do
  LD_DEBUG=files "$P/bin/otc" $args >/dev/null 2>"$WORK/ld" || fail "otc $args"
  grep -q 'libLLVM' "$WORK/ld" && fail "otc $args loaded libLLVM at start-up"
  grep -q "file=.*libotc.so" "$WORK/ld" || fail "otc $args: libotc.so not loaded (static?)"
done
# The installed command compiles to C and runs a model (the files it needs are all installed).
run "$P/bin/otc" compile "$MODEL" --emit-c "$WORK/c" --name iris
run "$CC" -std=c99 -O2 -c "$WORK/c/iris.c" -o "$WORK/iris.o"
printf '5.1,3.5,1.4,0.2\n' >"$WORK/in.csv"
run "$P/bin/otc" run "$MODEL" --input "$WORK/in.csv" --no-header
[ "$(wc -l <"$WORK/out")" = 2 ] || fail "otc run printed: $(cat "$WORK/out")"
if [ "$HAVE_JIT" = 1 ]; then
  run "$P/bin/otc" run "$MODEL" --input "$WORK/in.csv" --no-header --jit
  LD_DEBUG=files "$P/bin/otc" compile "$MODEL" --emit-llvm "$WORK/m.ll" >/dev/null 2>"$WORK/ld" ||
    fail "otc compile --emit-llvm from the prefix: $(grep -v '^ *[0-9]*:' "$WORK/ld" | head -5)"
  grep -q "file=$L/libotc_llvm.so" "$WORK/ld" || fail "the plugin was not loaded from $L"
  grep -q "define" "$WORK/m.ll" || fail "no IR written"
  # Without the plugin: a clear error and exit 2, not a crash.
  cp -a "$P" "$WORK/noplugin" && rm "$WORK/noplugin/$LIBDIR/libotc_llvm.so"
  "$WORK/noplugin/bin/otc" compile "$MODEL" --emit-llvm "$WORK/n.ll" >/dev/null 2>"$WORK/err"
  rc=$?
  [ $rc = 2 ] || fail "without the plugin: exit $rc, expected 2"
  grep -q "LLVM backend (libotc_llvm.so) could not be loaded" "$WORK/err" ||
    fail "without the plugin: $(cat "$WORK/err")"
fi

# pkg-config: shared, then static (libotc.a and its private dependencies from --static).
export PKG_CONFIG_PATH=$L/pkgconfig
run pkg-config --modversion otc
[ "$(cat "$WORK/out")" = "$VERSION" ] || fail "pkg-config --modversion: $(cat "$WORK/out")"
cd "$WORK" || exit 1
run "$CC" $CFLAGS "$SRC/tests/install/consumer.c" -o pc_shared $(pkg-config --cflags --libs otc) -lm
run env LD_LIBRARY_PATH="$L" ./pc_shared
grep -q "interpreter: y = \[-0.848284, 0.991860\]" out || fail "pc_shared: $(cat out)"
static_libs=$(pkg-config --static --libs otc | sed 's/-lotc\b/-l:libotc.a/')
run "$CC" $CFLAGS "$SRC/tests/install/consumer.c" -o pc_static $(pkg-config --cflags otc) $static_libs -lm
ldd pc_static | grep -q 'libotc\.so' && fail "pc_static links libotc.so"
run ./pc_static
if [ "$HAVE_JIT" = 1 ]; then
  run "$CC" $CFLAGS -DOTC_TEST_JIT "$SRC/tests/install/consumer.c" -o pc_jit \
      $(pkg-config --cflags --libs otc-compiler) -lm
  # LeakSanitizer's own tracer has crashed (signal 11 inside it, "LeakSanitizer has encountered a
  # fatal error") at this consumer's exit when the suite ran it beside the other JIT tests on a
  # cold cache; the JIT tests run under LeakSanitizer and the CLI under valgrind, so here the
  # installed tree is what is tested and the leak check is off.
  nolsan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  ASAN_OPTIONS=$nolsan LD_DEBUG=files LD_LIBRARY_PATH="$L" ./pc_jit >out 2>"$WORK/ld" ||
    fail "pc_jit (exit $?): $(cat out) $(grep -v '^ *[0-9]*:' "$WORK/ld" | tail -20)"
  grep -q "jit: y = \[-0.848284, 0.991860\]" out || fail "pc_jit: $(cat out)"
  grep -q "file=$L/libotc_llvm.so" "$WORK/ld" || fail "pc_jit did not load the installed plugin"
  static_libs=$(pkg-config --static --libs otc-compiler |
                sed 's/-lotc\b/-l:libotc.a/; s/-lotc_compiler\b/-l:libotc_compiler.a/')
  run "$CC" $CFLAGS -DOTC_TEST_JIT "$SRC/tests/install/consumer.c" -o pc_jit_static \
      $(pkg-config --cflags otc-compiler) $static_libs -lm
  run env ASAN_OPTIONS="$nolsan" ./pc_jit_static
  grep -q "jit: y = \[-0.848284, 0.991860\]" out || fail "pc_jit_static: $(cat out)"
fi
unset PKG_CONFIG_PATH

# find_package(otc): a separate CMake project.
run "$CMAKE" -S "$SRC/tests/install" -B "$WORK/cm" -DCMAKE_PREFIX_PATH="$P" \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" -DOTC_EXPECT_VERSION="$VERSION" -DCMAKE_BUILD_TYPE=Release
targets="consumer_shared consumer_static"
[ "$HAVE_JIT" = 1 ] && targets="$targets consumer_jit_shared consumer_jit_static"
for t in $targets; do run "$CMAKE" --build "$WORK/cm" --target "$t"; done
for t in $targets; do
  run "$WORK/cm/$t" # shared ones find lib/ through the build RPATH CMake sets
  grep -q "interpreter: y = \[-0.848284, 0.991860\]" "$WORK/out" || fail "$t: $(cat "$WORK/out")"
  case $t in *jit*) grep -q "jit: y = \[-0.848284, 0.991860\]" "$WORK/out" || fail "$t: $(cat "$WORK/out")" ;; esac
done
ldd "$WORK/cm/consumer_static" | grep -q 'libotc\.so' && fail "consumer_static links libotc.so"
ldd "$WORK/cm/consumer_shared" | grep -q "$L/libotc\.so" || fail "consumer_shared: not $L/libotc.so"
# The Python package (when built; not under a sanitizer): imported from the prefix's
# site-packages without the build tree, its extension finding libotc in the prefix (RPATH).
for site in "$P"/lib/python3*/*-packages; do
  [ -d "$site/otc" ] || continue
  [ -n "$CFLAGS" ] && [ "$CFLAGS" != " " ] && break
  run env -u LD_LIBRARY_PATH PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c \
    "import otc, otc.neat, numpy as np; m = otc.Model.load('$MODEL'); \
print(otc.__file__, m.run(np.array([[5.1, 3.5, 1.4, 0.2]], np.float32)).shape)"
  grep -q "^$site/otc/__init__.py (1, 3)" "$WORK/out" || fail "python: $(cat "$WORK/out")"
done
echo "install test: ok ($P)"
