#!/usr/bin/env bash
# docs/library.md's program end to end: examples/library_train.c trains and saves a model, and
# `otc run` takes that file and classifies the circle data set's rows against their labels;
# the page shows the program as the file has it.
# Usage: library_train.sh LIBRARY_TRAIN_BINARY OTC SOURCE_DIR
set -u
PROG=$1 OTC=$2 SRC=$3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/otc_library_train.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
CSV=$SRC/examples/data/circle.csv

# docs/library.md shows the program whole: its ```c block is the file, byte for byte.
awk '/^```c$/ && !done {on = 1; next} on && /^```$/ {on = 0; done = 1} on' \
    "$SRC/docs/library.md" >"$WORK/shown.c"
cmp -s "$WORK/shown.c" "$SRC/examples/library_train.c" ||
    fail "docs/library.md's program differs from examples/library_train.c"

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
