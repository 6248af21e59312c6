#!/bin/sh
# f32 vs int8 vs f16 vs weights-int8 emitted C for a microcontroller, for the models of
# docs/quantize.md: flash (text + data of the Cortex-M4 object, -Os; the float modes for an
# M4F, -mfloat-abi=hard) and RAM (workspace + state at batch 1), then each model's accuracy in
# the four modes (the host's arithmetic, `otc run --quantized MODE`, which the tests hold
# equal to the emitted C), then the host speed of each mode's C at batch 1. Tables, never
# pass/fail.
# usage: bench/quant_int8.sh OTC SOURCE_DIR [LENET.otm]
#   Trains iris (60 epochs) and, without LENET.otm, LeNet on Fashion-MNIST (6 epochs, --jit,
#   a few minutes); evolves an XOR champion (seed 3); the DPNV champion is the shipped one.
#   Needs arm-none-eabi-gcc and /usr/share/datasets/fashion-mnist.
set -eu
otc=$1
src=$2
lenet=${3:-}
fmnist=idx:/usr/share/datasets/fashion-mnist
command -v arm-none-eabi-gcc > /dev/null || { echo "needs arm-none-eabi-gcc"; exit 1; }
dir=$(mktemp -d /tmp/otc_qbench_XXXXXX)
trap 'rm -rf "$dir"' EXIT
iris=$src/examples/data/iris.csv

# ---- the models ----
"$otc" train "$src/examples/models/iris_mlp.otm" --data "$iris" --target species --epochs 60 \
    --val-split 0 --out "$dir/iris.otm" > /dev/null
"$otc" evolve "$src/examples/neat/xor.ini" --task xor --threads 1 --seed 3 \
    --out "$dir/xor.otm" > /dev/null
printf 'a,b,y\n0,0,0\n0,1,1\n1,0,1\n1,1,0\n' > "$dir/xor.csv"
if [ -z "$lenet" ]; then
    lenet=$dir/lenet.otm
    "$otc" new cnn --input 1x28x28 --spec c6k5p2-p2-c16k5-p2-f120-f84 --outputs 10 \
        -o "$dir/lenet0.otm" > /dev/null
    "$otc" train "$dir/lenet0.otm" --data "$fmnist" --epochs 6 --batch 64 --lr 0.001 \
        --val-split 0 --jit --out "$lenet" > /dev/null
fi
dpnv=$src/examples/deploy/dpnv_champion.otm
# DPNV's calibration: the inputs the float champion sees over its first 3000 steps, as one
# sequence (a shim around the f32 C logs them).
cat > "$dir/log_shim.h" << 'EOF'
#include <stdio.h>
#include "m.h"
#define SHIM_WORKSPACE_BYTES(b) M_WORKSPACE_BYTES(b)
#define SHIM_IN_FLOATS M_IN_FLOATS
static long shim_steps;
static int shim_forward(const float *in, float *out, int b, void *ws) {
    if (shim_steps++ < 3000) fprintf(stderr, "%.9g,%.9g,%.9g,%.9g\n", in[0], in[1], in[2], in[3]);
    return m_forward(in, out, b, ws);
}
static int shim_reset(void *ws, int b) { return m_reset(ws, b); }
EOF
# The int8 API behind the float balancer's calls (m.c and the balancer are built with
# OTC_M_FLOAT_API).
cat > "$dir/int8_shim.h" << 'EOF'
#include "m.h"
#define SHIM_WORKSPACE_BYTES(b) sizeof(float)
#define SHIM_IN_FLOATS M_IN_WIDTH
static int shim_forward(const float *in, float *out, int b, void *ws) {
    (void)b, (void)ws;
    m_forward_float(in, out);
    return 0;
}
static int shim_reset(void *ws, int b) {
    (void)b, (void)ws;
    m_reset();
    return 0;
}
EOF
balance() { # balance DIR SHIM: prints the balanced steps out of 100000
    ln -sf "$dir/$2" "$1/shim.h"
    cc -std=c99 -O2 -DOTC_M_FLOAT_API -DOTC_MODEL=shim -DOTC_MODEL_UPPER=SHIM -I "$1" \
        "$src/examples/deploy/pole_balancer.c" "$1/m.c" -o "$1/pole" -lm
    "$1/pole" 2> "$1/inputs.csv" | awk '{ print $2 }' || true
}
"$otc" compile "$dpnv" --emit-c "$dir/dpnv_log" --name m --batch 1 > /dev/null
balance "$dir/dpnv_log" log_shim.h > /dev/null
# The bias input is always 0.5, a constant column calibration refuses: a last row of zeros.
(echo "x,a,b,bias" && cat "$dir/dpnv_log/inputs.csv" && echo 0,0,0,0) > "$dir/dpnv_cal.csv"

# ---- flash and RAM ----
emit() { # emit MODEL MODE OUTDIR CAL [DROP]: the C, and its RAM from the summary
    m=$1 mode=$2 out=$3 cal=$4 drop=${5:-}
    if [ "$mode" = int8 ]; then
        # shellcheck disable=SC2086
        "$otc" compile "$m" --emit-c "$out" --name m --quantize int8 --calibrate "$cal" \
            ${drop:+--drop $drop} > "$out.log"
        awk '/RAM: workspace/ { print $3 + $6 }' "$out.log"
    else
        q=""
        [ "$mode" = f32 ] || q="--quantize $mode"
        # shellcheck disable=SC2086
        "$otc" compile "$m" --emit-c "$out" --name m --batch 1 $q > "$out.log"
        awk '/workspace at batch/ { print $5 }' "$out.log"
    fi
}
flash() { # flash MODE FILE: text + data of the object
    fpu=""
    [ "$1" = int8 ] || fpu="-mfloat-abi=hard -mfpu=fpv4-sp-d16"
    # shellcheck disable=SC2086
    arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb $fpu -Os -std=c99 -c "$2" -o "$dir/o.o"
    arm-none-eabi-size "$dir/o.o" | awk 'NR == 2 { print $1 + $2 }'
}
echo "| model | f32 flash / RAM | int8 | f16 | weights-int8 |"
echo "|---|---|---|---|---|"
row() { # row LABEL MODEL CAL [DROP]
    line="| $1 |"
    for mode in f32 int8 f16 weights-int8; do
        ram=$(emit "$2" $mode "$dir/c_$mode" "$3" "${4:-}")
        line="$line $(flash $mode "$dir/c_$mode/m.c") / $ram |"
    done
    echo "$line"
}
row "iris MLP (4-16-3)" "$dir/iris.otm" "$iris" species
row "evolved XOR champion" "$dir/xor.otm" "$dir/xor.csv" y
row "DPNV champion (recurrent NEAT)" "$dpnv" "$dir/dpnv_cal.csv"
row "Fashion-MNIST LeNet" "$lenet" "$fmnist"

# ---- accuracy ----
quant() { # the --quantized options of a mode, given the calibration options
    mode=$1
    shift
    case $mode in
    f32) ;;
    int8) echo "--quantized int8 $*" ;;
    *) echo "--quantized $mode" ;;
    esac
}
echo
echo "| model | f32 | int8 | f16 | weights-int8 |"
echo "|---|---|---|---|---|"
line="| iris MLP, 150 rows |"
for mode in f32 int8 f16 weights-int8; do
    # shellcheck disable=SC2046
    "$otc" run "$dir/iris.otm" --input "$iris" --drop species --argmax -o "$dir/p.csv" \
        $(quant $mode --calibrate "$iris")
    right=$(paste -d, "$iris" "$dir/p.csv" | awk -F, 'NR > 1 && $5 == $NF { n++ } END { print n + 0 }')
    line="$line $right/150 |"
done
echo "$line"
line="| evolved XOR champion (outputs for 00, 01, 10, 11) |"
for mode in f32 int8 f16 weights-int8; do
    # shellcheck disable=SC2046
    "$otc" run "$dir/xor.otm" --input "$dir/xor.csv" --drop y -o "$dir/p.csv" \
        $(quant $mode --calibrate "$dir/xor.csv") # --drop applies to the calibration rows too
    outs=$(tail -n +2 "$dir/p.csv" | awk '{ printf "%s%.3f", (NR > 1 ? ", " : ""), $1 }')
    solved=$(paste -d, "$dir/xor.csv" "$dir/p.csv" |
        awk -F, 'NR > 1 && ($4 > 0.5) != ($3 == 1) { bad = 1 } END { print bad ? "fails" : "solves" }')
    line="$line $solved ($outs) |"
done
echo "$line"
line="| DPNV champion, steps balanced of 100,000 |"
for mode in f32 int8 f16 weights-int8; do
    emit "$dpnv" $mode "$dir/d_$mode" "$dir/dpnv_cal.csv" > /dev/null
    shim=log_shim.h
    [ $mode = int8 ] && shim=int8_shim.h
    line="$line $(balance "$dir/d_$mode" $shim) |"
done
echo "$line"
line="| Fashion-MNIST LeNet, 10,000 test images |"
for mode in f32 int8 f16 weights-int8; do
    # shellcheck disable=SC2046
    acc=$("$otc" run "$lenet" --data "$fmnist" --argmax -o /dev/null \
        $(quant $mode --calibrate "$fmnist") 2>&1 | awk '/accuracy/ { printf "%.2f%%", 100 * $4 }')
    line="$line $acc |"
done
echo "$line"

# ---- host speed at batch 1 ----
# One sample at a time through the emitted C built with the host's cc -O2 (no -march): the
# median of 7 runs of the microseconds per call.
cat > "$dir/speed.c" << 'EOF'
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "m.h"
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv) {
    int calls = atoi(argv[1]);
    double us[7];
#ifdef INT8
    static int8_t in[M_IN_WIDTH], out[M_OUT_WIDTH];
    for (int i = 0; i < M_IN_WIDTH; i++) in[i] = (int8_t)(i * 37 % 255 - 127);
#else
    static float in[M_IN_FLOATS], out[M_OUT_FLOATS];
    static float ws[M_WORKSPACE_BYTES(1) / sizeof(float) + 1];
    for (int i = 0; i < M_IN_FLOATS; i++) in[i] = (float)(i * 37 % 255) / 255.0f;
#ifdef DECODED
    m_decode(ws);
#endif
#endif
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (int c = 0; c < calls; c++) {
#ifdef INT8
            m_forward(in, out);
#elif defined DECODED
            m_forward_decoded(in, out, 1, ws);
#else
            m_forward(in, out, 1, ws);
#endif
        }
        us[r] = (now() - t0) / calls * 1e6;
    }
    qsort(us, 7, sizeof us[0], cmp);
    printf("%.3f\n", us[3]);
    (void)out;
    return 0;
}
EOF
echo
# f16 and weights-int8 twice: decoding at every call (m_forward), and once (m_decode, then
# m_forward_decoded).
echo "| model, µs per sample at batch 1 (host) | f32 | int8 | f16 | weights-int8 |" \
    "f16 decoded once | weights-int8 decoded once |"
echo "|---|---|---|---|---|---|---|"
speed_row() { # speed_row LABEL MODEL CAL CALLS [DROP]
    line="| $1 |"
    for variant in f32 int8 f16 weights-int8 f16+ weights-int8+; do
        sm=${variant%+} # (emit sets m and mode)
        emit "$2" "$sm" "$dir/s_$sm" "$3" "${5:-}" > /dev/null
        def=""
        [ "$sm" = int8 ] && def=-DINT8
        [ "$sm" = "$variant" ] || def=-DDECODED
        cc -std=c99 -O2 $def -I "$dir/s_$sm" "$dir/speed.c" "$dir/s_$sm/m.c" -o "$dir/speed" -lm
        line="$line $("$dir/speed" "$4") |"
    done
    echo "$line"
}
speed_row "iris MLP" "$dir/iris.otm" "$iris" 200000 species
speed_row "DPNV champion" "$dpnv" "$dir/dpnv_cal.csv" 200000
speed_row "Fashion-MNIST LeNet" "$lenet" "$fmnist" 300
