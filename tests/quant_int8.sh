#!/bin/sh
# `otc compile --quantize int8` end to end: iris keeps its accuracy and an evolved XOR
# champion still solves XOR in int8; the C builds for Cortex-M0 and M4 with no soft-float
# helper; --quantize f16 and weights-int8 build for a Cortex-M4F and print what `otc run
# --quantized` prints; armhf under qemu-arm prints what the host build prints; bad calibration data and an
# op without an integer lowering exit 2 naming the column or node.
# usage: quant_int8.sh OTC SOURCE_DIR MODELS_DIR   (exit 77 without the Arm toolchains;
#        MODELS_DIR: tests/cli/make_test_models.c's models)
set -eu
otc=$1
src=$2
models=$3
for tool in arm-none-eabi-gcc arm-none-eabi-nm arm-linux-gnueabihf-gcc qemu-arm cc; do
    command -v "$tool" > /dev/null 2>&1 || { echo "skip: $tool not installed"; exit 77; }
done
dir=$(mktemp -d /tmp/otc_quant_XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A driver over the int8 API: CSV rows in (features, then the label); out, as `otc run
# --argmax` writes them, the dequantised outputs and the argmax; on standard error the count
# of rows whose argmax is the label.
cat > "$dir/main.c" << 'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include MODEL_H
int main(void) {
    char line[512];
    int rows = 0, right = 0;
    while (fgets(line, sizeof line, stdin)) {
        float x[P(IN_WIDTH)], label = -1;
        int8_t in[P(IN_WIDTH)], out[P(OUT_WIDTH)];
        char *s = line, *end;
        int n = 0;
        for (; n < P(IN_WIDTH); n++, s = end + (*end == ',')) {
            x[n] = strtof(s, &end);
            if (end == s) break;
        }
        if (n < P(IN_WIDTH)) continue; /* the header */
        if (*s) label = strtof(s, &end);
        static const float sc[] = P(IN_SCALES);
        static const int zp[] = P(IN_ZERO_POINTS);
        for (int i = 0; i < P(IN_WIDTH); i++) {
            float v = x[i] / sc[i] + (float)zp[i];
            v = v < -128 ? -128 : v > 127 ? 127 : v;
            in[i] = (int8_t)(v < 0 ? v - 0.5f : v + 0.5f);
        }
        FORWARD(in, out);
        int best = 0;
        for (int i = 0; i < P(OUT_WIDTH); i++) {
            printf("%s%.7g", i ? "," : "",
                   (double)(P(OUT0_SCALE) * (float)((int32_t)out[i] - P(OUT0_ZERO_POINT))));
            if (out[i] > out[best]) best = i;
        }
        printf(",%d\n", best);
        rows++;
        right += best == (int)label;
    }
    fprintf(stderr, "right %d of %d\n", right, rows);
    return 0;
}
EOF

"$otc" train "$src/examples/models/iris_mlp.otm" --data "$src/examples/data/iris.csv" \
    --target species --epochs 60 --val-split 0 --out "$dir/iris.otm" > /dev/null
"$otc" compile "$dir/iris.otm" --emit-c "$dir/c" --quantize int8 \
    --calibrate "$src/examples/data/iris.csv" --drop species > "$dir/log" ||
    fail "compile --quantize int8: $(cat "$dir/log")"
grep -q 'integer arithmetic only' "$dir/log" || fail "no summary: $(cat "$dir/log")"

# Microcontrollers without an FPU: no soft-float helper may be linked in.
for cpu in cortex-m0 cortex-m4; do
    arm-none-eabi-gcc -mcpu=$cpu -mthumb -Os -std=c99 -Wall -Wextra -Werror \
        -c "$dir/c/iris.c" -o "$dir/iris_$cpu.o" || fail "$cpu build"
    if arm-none-eabi-nm "$dir/iris_$cpu.o" | grep -E '__aeabi_[fd]|__aeabi_[il]2[fd]|__(add|sub|mul|div)[sd]f3'; then
        fail "$cpu object calls soft-float helpers"
    fi
done

# The float wrappers build when asked for (here for an M4 with its FPU).
arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -Os -std=c99 \
    -Wall -Wextra -Werror -DOTC_IRIS_FLOAT_API -c "$dir/c/iris.c" -o "$dir/iris_f.o" ||
    fail "float API build"
arm-none-eabi-nm "$dir/iris_f.o" | grep -q 'T iris_forward_float' || fail "no iris_forward_float"

# Weight-only storage for CPUs with an FPU (a Cortex-M4F): f32 compute on weights stored as
# f16 or int8. The object has no soft-float helper, and the host build prints what `otc run
# --quantized MODE` prints.
cat > "$dir/fmain.c" << 'EOF'
#include <stdio.h>
#include <stdlib.h>
#include "iris.h"
int main(void) {
    static float ws[IRIS_WORKSPACE_BYTES(1) / sizeof(float)];
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        float x[IRIS_IN_FLOATS], y[IRIS_OUT_FLOATS];
        char *s = line, *end;
        int n = 0;
        for (; n < IRIS_IN_FLOATS; n++, s = end + (*end == ',')) {
            x[n] = strtof(s, &end);
            if (end == s) break;
        }
        if (n < IRIS_IN_FLOATS || iris_forward(x, y, 1, ws)) continue; /* the header */
        for (int i = 0; i < IRIS_OUT_FLOATS; i++) printf("%s%.7g", i ? "," : "", (double)y[i]);
        printf("\n");
    }
    return 0;
}
EOF
for mode in f16 weights-int8; do
    "$otc" compile "$dir/iris.otm" --emit-c "$dir/$mode" --name iris --quantize $mode \
        --batch 1 > "$dir/log" || fail "compile --quantize $mode: $(cat "$dir/log")"
    arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -Os -std=c99 \
        -Wall -Wextra -Werror -c "$dir/$mode/iris.c" -o "$dir/iris_$mode.o" ||
        fail "$mode: Cortex-M4F build"
    if arm-none-eabi-nm "$dir/iris_$mode.o" | grep -E '__aeabi_[fd]|__(add|sub|mul|div)[sd]f3'; then
        fail "$mode: the Cortex-M4F object calls soft-float helpers"
    fi
    cc -std=c99 -O2 -I"$dir/$mode" "$dir/fmain.c" "$dir/$mode/iris.c" -lm -o "$dir/f_$mode"
    "$dir/f_$mode" < "$src/examples/data/iris.csv" > "$dir/$mode.out"
    "$otc" run "$dir/iris.otm" --input "$src/examples/data/iris.csv" --drop species \
        --quantized $mode | tail -n +2 > "$dir/$mode.ref"
    # The same weights; the interpreter's sums and the C's may differ in the last bit.
    paste -d, "$dir/$mode.out" "$dir/$mode.ref" | awk -F, '{
        for (i = 1; i <= NF / 2; i++) {
            d = $i - $(i + NF / 2); if (d < 0) d = -d
            m = $i < 0 ? -$i : $i; if (m < 1) m = 1
            if (d > 1e-5 * m) bad = 1
        } } END { exit bad }' || fail "$mode: otc run --quantized and the C differ"
done
! cmp -s "$dir/f16.out" "$dir/weights-int8.out" || fail "f16 and weights-int8 agree exactly"

# The host and armhf (under qemu) print the same bytes.
defs="-DMODEL_H=\"iris.h\" -DP(x)=IRIS_##x -DFORWARD=iris_forward"
cc -std=c99 -O2 -I"$dir/c" $defs "$dir/main.c" "$dir/c/iris.c" -o "$dir/host"
arm-linux-gnueabihf-gcc -std=c99 -O2 -static -I"$dir/c" $defs "$dir/main.c" "$dir/c/iris.c" \
    -o "$dir/arm"
"$dir/host" < "$src/examples/data/iris.csv" > "$dir/host.out" 2> "$dir/host.err"
qemu-arm "$dir/arm" < "$src/examples/data/iris.csv" > "$dir/arm.out" 2> /dev/null ||
    fail "qemu-arm run"
cmp "$dir/host.out" "$dir/arm.out" || fail "armhf and host outputs differ"
# ...and `otc run --quantized int8`, the host's integer reference, prints the same values.
"$otc" run "$dir/iris.otm" --input "$src/examples/data/iris.csv" --drop species --argmax \
    --quantized int8 --calibrate "$src/examples/data/iris.csv" | tail -n +2 > "$dir/ref.out"
cmp "$dir/host.out" "$dir/ref.out" || fail "otc run --quantized and the emitted C differ"

# Accuracy: the int8 argmax against the float model's, on all 150 rows.
"$otc" run "$dir/iris.otm" --input "$src/examples/data/iris.csv" --drop species --argmax \
    -o "$dir/float.csv"
float_right=$(paste -d, "$src/examples/data/iris.csv" "$dir/float.csv" |
    awk -F, 'NR > 1 && $5 == $NF { n++ } END { print n + 0 }')
int8_right=$(awk '{ print $2 }' "$dir/host.err")
echo "iris: float $float_right/150 right, int8 $int8_right/150"
[ $((float_right - int8_right)) -le 2 ] || fail "int8 lost accuracy: $int8_right vs $float_right"

# An evolved XOR champion (NEAT neurons) still solves XOR in int8.
"$otc" evolve "$src/examples/neat/xor.ini" --task xor --threads 1 --seed 3 \
    --out "$dir/xor.otm" > /dev/null
printf 'a,b,y\n0,0,0\n0,1,1\n1,0,1\n1,1,0\n' > "$dir/xor.csv"
"$otc" compile "$dir/xor.otm" --emit-c "$dir/x" --name xor --quantize int8 \
    --calibrate "$dir/xor.csv" --drop y > /dev/null || fail "xor compile"
cat > "$dir/xor_main.c" << 'EOF'
#include <stdio.h>
#include "xor.h"
int main(void) {
    int ok = 1;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            static const float sc[] = XOR_IN_SCALES;
            static const int zp[] = XOR_IN_ZERO_POINTS;
            int8_t in[2], out[1];
            in[0] = (int8_t)(a / sc[0] + (float)zp[0] + 0.5f);
            in[1] = (int8_t)(b / sc[1] + (float)zp[1] + 0.5f);
            xor_forward(in, out);
            float y = XOR_OUT0_SCALE * (float)(out[0] - XOR_OUT0_ZERO_POINT);
            printf("%d xor %d -> %.3f\n", a, b, y);
            ok &= (y > 0.5f) == (a != b);
        }
    return ok ? 0 : 1;
}
EOF
cc -std=c99 -I"$dir/x" "$dir/xor_main.c" "$dir/x/xor.c" -o "$dir/xor" && "$dir/xor" ||
    fail "the int8 XOR champion does not solve XOR"
arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -Os -Werror -c "$dir/x/xor.c" -o "$dir/xor.o"
! arm-none-eabi-nm "$dir/xor.o" | grep -q '__aeabi_[fd]' || fail "xor object uses soft float"

# Bad input: exit 2 and a message naming what is wrong.
expect2() { # expect2 PATTERN ARGS...
    pat=$1
    shift
    set +e
    "$otc" compile "$@" > "$dir/err" 2>&1
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "exit $rc, not 2, for: $* ($(cat "$dir/err"))"
    grep -q "$pat" "$dir/err" || fail "no '$pat' in: $(cat "$dir/err")"
}
expect2 'feature column\|takes 4\|4 ' "$dir/iris.otm" --emit-c "$dir/e" --quantize int8 \
    --calibrate "$src/examples/data/iris.csv"
printf 'a,b,c,d\n1,2,3,4\n1,3,3,5\n2,2,3,4\n' > "$dir/const.csv"
expect2 'column 3 (c) is constant' "$dir/iris.otm" --emit-c "$dir/e" --quantize int8 \
    --calibrate "$dir/const.csv"
printf 'a,b,c,d\n1,2,3,4\n1,nan,3,5\n2,2,3,4\n' > "$dir/nan.csv"
expect2 'line 3\|column 2\|nan' "$dir/iris.otm" --emit-c "$dir/e" --quantize int8 \
    --calibrate "$dir/nan.csv"
expect2 'needs --calibrate' "$dir/iris.otm" --emit-c "$dir/e" --quantize int8
expect2 'needs no --calibrate' "$dir/iris.otm" --emit-c "$dir/e" --quantize f16 \
    --calibrate "$dir/const.csv"
expect2 "unknown --quantize 'int4'" "$dir/iris.otm" --emit-c "$dir/e" --quantize int4 \
    --calibrate "$dir/const.csv"
expect2 'one input' "$models/two_inputs.otm" --emit-c "$dir/e" --quantize int8 \
    --calibrate "$dir/const.csv"
[ ! -e "$dir/e/iris.c" ] || fail "a refused compile wrote files"

# A recurrent model (a running sum through a delay) runs its rows as one sequence, its state
# in int8: within a few of the output's steps (1/51 here) of the float model.
printf 'x\n1\n2\n-1\n0.5\n3\n' > "$dir/seq.csv"
"$otc" run "$models/running_sum.otm" --input "$dir/seq.csv" > "$dir/f32.csv"
"$otc" run "$models/running_sum.otm" --input "$dir/seq.csv" --quantized int8 \
    --calibrate "$dir/seq.csv" > "$dir/i8.csv"
paste -d, "$dir/f32.csv" "$dir/i8.csv" |
    awk -F, 'NR > 1 { d = $1 - $2; if (d < 0) d = -d; if (d > 0.03) bad = 1 } END { exit bad }' ||
    fail "recurrent int8 far from float: $(paste -d, "$dir/f32.csv" "$dir/i8.csv")"
echo "quant_int8: ok"
