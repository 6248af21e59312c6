#!/usr/bin/env bash
# The LLVM backend through the `otc` command: compile --emit-llvm/--emit-asm/--emit-obj (host
# and aarch64), bench (table and --json, --export), evolve --jit.
# Usage: jit_cli.sh OTC SOURCE_DIR MODELS_DIR
set -uo pipefail
OTC=$1 SRC=$2 MODELS=$3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# LeakSanitizer's own stop-the-world tracer sometimes crashes at a JIT process's exit on a
# loaded machine ("Tracer caught signal 11", then "LeakSanitizer has encountered a fatal
# error"; no leak is reported, see tests/install_test.sh): such a run is tried once more. A
# leak report or any other failure is not retried.
lsan_tracer_crashed() {
    grep -q "^Tracer caught signal" "$WORK/err" &&
        grep -q "LeakSanitizer has encountered a fatal error" "$WORK/err"
}
run() { # expected-exit args...
    local want=$1; shift
    "$OTC" "$@" >"$WORK/out" 2>"$WORK/err"
    local got=$?
    if [ "$got" != "$want" ] && lsan_tracer_crashed; then
        "$OTC" "$@" >"$WORK/out" 2>"$WORK/err"
        got=$?
    fi
    [ "$got" = "$want" ] || fail "otc $* exited $got, not $want: $(head -c 400 "$WORK/err")"
}
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 400 "$1")"; }
MODEL=$MODELS/iris_mlp.otm

run 0 compile "$MODEL" --emit-llvm "$WORK/m.ll" --emit-asm "$WORK/m.s" --emit-obj "$WORK/m.o" \
    --name iris
has "$WORK/out" "wrote $WORK/m.o and $WORK/m.h"
has "$WORK/m.ll" "@iris_forward(ptr"
has "$WORK/m.h" "int iris_forward(const float *in, float *out, int batch, void *workspace);"
[ -s "$WORK/m.o" ] || fail "empty object"
# Vector code for the host (xmm at least; ymm with AVX2).
grep -qE "[xy]mm" "$WORK/m.s" || fail "no vector registers in the assembly"

run 0 compile "$MODEL" --emit-obj "$WORK/a64.o" --target aarch64-linux-gnu --name iris
# ELF e_machine (bytes 18-19, little endian): 0xb7 is AArch64.
[ "$(od -An -tx1 -j18 -N1 "$WORK/a64.o" | tr -d ' ')" = "b7" ] || fail "not an AArch64 object"
run 2 compile "$MODEL" --emit-obj "$WORK/x.o" --target no-such-arch-linux
has "$WORK/err" "no-such-arch"

run 0 bench --random 12 --batch 4 --json --block-ms 1 --no-c
for key in interpreter_us_per_sample jit_us_per_sample c_us_per_sample jit_compile_ms \
    jit_compile_cpu_ms jit_math_library_cpu_ms; do
    has "$WORK/out" "\"$key\""
done
run 0 bench "$MODEL" --train --batch 8 --block-ms 1 --export "$WORK/g.json"
has "$WORK/out" "jit"
has "$WORK/out" "emitted C"
has "$WORK/out" "ms CPU (" # compile times in thread CPU time, the wall clock beside them
has "$WORK/g.json" "otc-bench-graph-1"
# Debian's python3 (scripts/install-deps.sh installs it), not whichever a PATH finds first.
/usr/bin/python3 "$SRC/bench/torch_compare.py" "$WORK/g.json" --check >"$WORK/out" ||
    fail "torch_compare --check"
has "$WORK/out" "matmul"
run 2 bench
has "$WORK/err" "--random"

# Three generations rarely solve XOR: exit 1 (goal not reached) is a normal outcome.
"$OTC" evolve "$SRC/examples/neat/xor.ini" --task xor --generations 3 --jit >"$WORK/out" 2>"$WORK/err"
[ $? -le 1 ] || fail "evolve --jit: $(head -c 400 "$WORK/err")"
has "$WORK/out" "jit: "

# --jit gives the same evolution: a recurrent pole task (dpnv) with every genome that lives
# past 10 steps switched to exact compiled code mid-trial, against the flat program alone.
# Five generations do not solve it (exit 1); the champions and the statistics (but their
# seconds column) must be byte-identical.
DPNV=$SRC/examples/neat/dpnv.ini
for j in flat jit; do
    flags=(); [ $j = jit ] && flags=(--jit --jit-steps 10)
    "$OTC" evolve "$DPNV" --task dpnv --seed 3 --generations 5 --threads 2 "${flags[@]}" \
        --out "$WORK/$j.otm" --stats "$WORK/$j.csv" >"$WORK/$j.out" 2>"$WORK/err"
    [ $? -le 1 ] || fail "evolve dpnv ${flags[*]}: $(head -c 400 "$WORK/err")"
    cut -d, -f1-12 "$WORK/$j.csv" >"$WORK/$j.cut"
done
grep -Eq "jit: [0-9]+ genome\(s\) ran past 10 steps: [1-9][0-9]* compiled" "$WORK/jit.out" ||
    fail "evolve dpnv --jit compiled nothing: $(cat "$WORK/jit.out")"
cmp -s "$WORK/flat.otm" "$WORK/jit.otm" || fail "evolve dpnv --jit: another champion"
cmp -s "$WORK/flat.cut" "$WORK/jit.cut" || fail "evolve dpnv --jit: other statistics"
run 2 evolve "$DPNV" --task dpnv --jit-steps 10
has "$WORK/err" "needs --jit"

# A recurrent model (running_sum.otm: h = 0.5 x + 0.5 h_prev, by hand 1, 2 -> 0.5, 1.25; 3
# from a reset state -> 1.5). run --jit starts each sequence from a reset state as the
# interpreter does; the emitted C (strict flags) and the object each step a driver's state.
RSUM=$MODELS/running_sum.otm
printf 'id,x\na,1\na,2\nb,3\nb,1\n' >"$WORK/two.csv"
run 0 run "$RSUM" --input "$WORK/two.csv" --sequence id --jit
printf 'output0\n0.5\n1.25\n1.5\n1.25\n' | diff - "$WORK/out" >/dev/null ||
    fail "run --jit on a recurrent model: $(cat "$WORK/out")"
cat >"$WORK/drive.c" <<'EOF_C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include HEADER
int main(void) {
    size_t n = rsum_workspace_bytes(1);
    void *ws = malloc(n);
    float x, y;
    if (!ws) return 1;
    memset(ws, 0x7f, n); /* garbage: the reset clears the state */
    (void)rsum_reset(ws, 1);
    x = 1; rsum_forward(&x, &y, 1, ws); printf("%g\n", y);
    x = 2; rsum_forward(&x, &y, 1, ws); printf("%g\n", y);
    (void)rsum_reset(ws, 1);
    x = 3; rsum_forward(&x, &y, 1, ws); printf("%g\n", y);
    free(ws);
    return 0;
}
EOF_C
run 0 compile "$RSUM" --emit-c "$WORK/rc" --name rsum
has "$WORK/rc/rsum.h" "int rsum_reset(void *workspace, int batch);"
cc -std=c99 -Wall -Wextra -Wshadow -Werror -pedantic -O2 -I"$WORK/rc" '-DHEADER="rsum.h"' \
    "$WORK/drive.c" "$WORK/rc/rsum.c" -o "$WORK/drive_c" -lm || fail "emitted recurrent C"
"$WORK/drive_c" >"$WORK/steps" && printf '0.5\n1.25\n1.5\n' | diff - "$WORK/steps" >/dev/null ||
    fail "emitted C steps: $(cat "$WORK/steps")"
run 0 compile "$RSUM" --emit-obj "$WORK/rs.o" --name rsum
has "$WORK/rs.h" "static inline void rsum_reset(void *workspace, int batch)"
cc -std=c99 -O2 -I"$WORK" '-DHEADER="rs.h"' "$WORK/drive.c" "$WORK/rs.o" -o "$WORK/drive_o" \
    -lm || fail "recurrent object"
"$WORK/drive_o" >"$WORK/steps" && printf '0.5\n1.25\n1.5\n' | diff - "$WORK/steps" >/dev/null ||
    fail "object steps: $(cat "$WORK/steps")"
echo ok
