#!/bin/sh
# f32 vs int8 emitted C for a microcontroller: flash (text + data of the Cortex-M4 object,
# -Os) and RAM (workspace + state) of each model, and, for an image model, the test accuracy
# of the float model and of the int8 one. A table, never pass/fail.
# usage: bench/quant_int8.sh OTC MODEL.otm CALIBRATION [DROP_COLS] [idx:DIR]
#   CALIBRATION: a CSV (DROP_COLS its columns to leave out, "-" for none) or idx:DIR
set -eu
otc=$1
model=$2
cal=$3
drop=${4:--}
images=${5:-}
command -v arm-none-eabi-gcc > /dev/null || { echo "needs arm-none-eabi-gcc"; exit 1; }
dir=$(mktemp -d /tmp/otc_qbench_XXXXXX)
trap 'rm -rf "$dir"' EXIT
dropopt=""
[ "$drop" = "-" ] || dropopt="--drop $drop"
name=m
"$otc" compile "$model" --emit-c "$dir/f" --name $name --batch 1 > "$dir/f.log"
# shellcheck disable=SC2086
"$otc" compile "$model" --emit-c "$dir/q" --name $name --quantize int8 --calibrate "$cal" \
    $dropopt > "$dir/q.log"
flash() { # text + data of the object; bss is RAM
    arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -Os -std=c99 -c "$1" -o "$dir/o.o"
    arm-none-eabi-size "$dir/o.o" | awk 'NR == 2 { print $1 + $2 }'
}
f_flash=$(flash "$dir/f/$name.c")
q_flash=$(flash "$dir/q/$name.c")
f_ram=$(awk '/workspace at batch/ { print $5 }' "$dir/f.log")
q_ram=$(awk '/RAM: workspace/ { print $3 + $6 }' "$dir/q.log")
printf '| %s | %s | %s | %s | %s |\n' "$(basename "$model")" "$f_flash" "$q_flash" "$f_ram" \
    "$q_ram"
if [ -n "$images" ]; then
    "$otc" run "$model" --data "$images" --argmax -o /dev/null 2>&1 | sed 's/^/f32: /'
    "$otc" run "$model" --data "$images" --argmax -o /dev/null --quantized int8 \
        --calibrate "$cal" 2>&1 | sed 's/^/int8: /'
fi
