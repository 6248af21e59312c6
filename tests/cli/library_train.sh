#!/usr/bin/env bash
# docs/library.md's program end to end: examples/library_train.c trains and saves a model, and
# `otc run` takes that file and classifies the circle data set's rows against their labels.
# Usage: library_train.sh LIBRARY_TRAIN_BINARY OTC SOURCE_DIR
set -u
PROG=$1 OTC=$2 SRC=$3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/otc_library_train.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
CSV=$SRC/examples/data/circle.csv

"$PROG" "$WORK/circle.otm" "$CSV" >"$WORK/out" 2>"$WORK/err" ||
    fail "library_train exited $?: $(cat "$WORK/err")"
grep -q "wrote $WORK/circle.otm" "$WORK/out" || fail "no model written: $(cat "$WORK/out")"

"$OTC" run "$WORK/circle.otm" --input "$CSV" --drop inside -o "$WORK/pred.csv" 2>"$WORK/err" ||
    fail "otc run refused the model: $(cat "$WORK/err")"
# One probability per row under the output's name; scored against the file's own labels.
[ "$(head -1 "$WORK/pred.csv")" = inside ] || fail "header $(head -1 "$WORK/pred.csv")"
acc=$(paste -d, <(tail -n +2 "$CSV") <(tail -n +2 "$WORK/pred.csv") |
    awk -F, '{ n++; ok += ($4 > 0.5) == ($3 > 0.5) } END { if (n == 400) printf "%.3f", ok / n }')
[ -n "$acc" ] || fail "otc run did not give 400 rows"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "accuracy $acc below 0.9"
echo "library_train: otc run accuracy $acc on the 400 rows"
