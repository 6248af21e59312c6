#!/bin/sh
# `otc compile --train --bptt K` against K: the compile's wall time, the emitted .c's size and
# the training workspace at batch 1, for an LSTM (otc new lstm). The emitted training step
# loops over a tape, so the time and the code stay flat and the workspace grows linearly
# with K. A table, never pass/fail.
# usage: bench/bptt_compile_scaling.sh OTC [K ...]   (default K: 1000 10000 100000)
set -eu
otc=$1
shift
[ $# -gt 0 ] || set -- 1000 10000 100000
dir=$(mktemp -d /tmp/otc_bptt_bench_XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$otc" new lstm --inputs 4 --hidden 16 --outputs 2 -o "$dir/m.otm" > /dev/null
printf '%8s %10s %10s %16s\n' K seconds "C bytes" "train ws bytes"
for k in "$@"; do
    start=$(date +%s.%N)
    "$otc" compile "$dir/m.otm" --emit-c "$dir/c" --name m --train --bptt "$k" > "$dir/log"
    end=$(date +%s.%N)
    ws=$(awk '/training: workspace/ { print $3 }' "$dir/log")
    printf '%8s %10.3f %10s %16s\n' "$k" "$(awk "BEGIN { print $end - $start }")" \
        "$(wc -c < "$dir/c/m.c")" "$ws"
done
