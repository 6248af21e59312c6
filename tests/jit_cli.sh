#!/usr/bin/env bash
# The LLVM backend through the `otc` command: compile --emit-llvm/--emit-asm/--emit-obj (host
# and aarch64), bench (table and --json, --export), evolve --jit.
# Usage: jit_cli.sh OTC SOURCE_DIR MODELS_DIR
set -uo pipefail
OTC=$1 SRC=$2 MODELS=$3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { # expected-exit args...
    local want=$1; shift
    "$OTC" "$@" >"$WORK/out" 2>"$WORK/err"
    local got=$?
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
for key in interpreter_us_per_sample jit_us_per_sample c_us_per_sample jit_compile_ms; do
    has "$WORK/out" "\"$key\""
done
run 0 bench "$MODEL" --train --batch 8 --block-ms 1 --export "$WORK/g.json"
has "$WORK/out" "jit"
has "$WORK/out" "emitted C"
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
echo ok
