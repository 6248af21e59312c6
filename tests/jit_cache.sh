#!/usr/bin/env bash
# The JIT's on-disk object cache through `otc run --jit` and `otc bench`: a warm run loads
# what a cold one compiled and computes the same rows; damaged entries are recompiled and
# replaced; two processes filling one cache at once; an unusable or disabled cache directory;
# the default location; eviction beyond OTC_CACHE_MAX_MB.
# Usage: jit_cache.sh OTC SOURCE_DIR MODELS_DIR
set -uo pipefail
OTC=$1 SRC=$2 MODELS=$3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
MODEL=$MODELS/iris_mlp.otm
DATA=$SRC/examples/data/iris.csv
# otc run --jit with the cache at $1, rows to $2; stderr must stay empty.
run_in() {
    OTC_CACHE_DIR=$1 "$OTC" run "$MODEL" --input "$DATA" --drop species --jit -o "$2" \
        2>"$2.err" || fail "otc run --jit (cache $1) failed: $(head -c 400 "$2.err")"
    [ ! -s "$2.err" ] || fail "otc run --jit (cache $1) wrote to stderr: $(head -c 400 "$2.err")"
}
entries() { find "$1" -name '*.otcobj' 2>/dev/null | sort; }
same() { cmp -s "$1" "$2" || fail "$1 and $2 differ: $(diff "$1" "$2" | head -5)"; }

# Cold, then warm: the same rows; the warm run adds no entry.
C=$WORK/cache
run_in "$C" "$WORK/cold.csv"
n=$(entries "$C" | wc -l)
[ "$n" -ge 1 ] || fail "no cache entries after a cold run"
run_in "$C" "$WORK/warm.csv"
same "$WORK/cold.csv" "$WORK/warm.csv"
[ "$(entries "$C" | wc -l)" = "$n" ] || fail "the warm run added entries"

# otc bench compiles nothing the second time (a neuron graph: both tiers are its own code).
B=$WORK/bench
bench() {
    OTC_CACHE_DIR=$B "$OTC" bench --random 12 --seed 4 --batch 4 --json --block-ms 1 --no-c \
        >"$WORK/bench.json" 2>"$WORK/bench.err" || fail "bench: $(head -c 400 "$WORK/bench.err")"
}
bench
grep -q '"jit_objects_compiled": [1-9]' "$WORK/bench.json" || fail "cold bench: $(cat "$WORK/bench.json")"
bench
grep -q '"jit_objects_compiled": 0, "jit_objects_loaded": [1-9]' "$WORK/bench.json" ||
    fail "warm bench compiled: $(cat "$WORK/bench.json")"

# Damaged entries (truncated, a flipped byte in the code, a flipped byte in the header) are
# ignored and replaced by the same object compiled again.
mkdir "$WORK/good"
cp "$C"/jit/*.otcobj "$WORK/good/"
mapfile -t files < <(entries "$C")
for i in "${!files[@]}"; do
    f=${files[$i]} size=$(stat -c %s "${files[$i]}")
    case $((i % 3)) in
    0) truncate -s $((size - 7)) "$f" ;;
    1) printf '\xff' | dd of="$f" bs=1 seek=$((size - 100)) conv=notrunc status=none ;;
    2) printf 'X' | dd of="$f" bs=1 seek=20 conv=notrunc status=none ;;
    esac
done
run_in "$C" "$WORK/repaired.csv"
same "$WORK/cold.csv" "$WORK/repaired.csv"
for g in "$WORK"/good/*.otcobj; do same "$g" "$C/jit/$(basename "$g")"; done

# Two processes compiling into one empty cache at once both succeed, with the same rows.
P=$WORK/parallel
OTC_CACHE_DIR=$P "$OTC" run "$MODEL" --input "$DATA" --drop species --jit -o "$WORK/p1.csv" &
a=$!
OTC_CACHE_DIR=$P "$OTC" run "$MODEL" --input "$DATA" --drop species --jit -o "$WORK/p2.csv" &
b=$!
wait $a || fail "first concurrent run failed"
wait $b || fail "second concurrent run failed"
same "$WORK/cold.csv" "$WORK/p1.csv"
same "$WORK/cold.csv" "$WORK/p2.csv"
[ -z "$(find "$P" -name '*.tmp.*')" ] || fail "temporary files left in $P"
[ "$(entries "$P" | wc -l)" = "$n" ] || fail "concurrent runs stored $(ls "$P/jit")"

# A cache directory that cannot be made (under a regular file: even root cannot) is no
# cache, silently; "off" turns it off (nothing is written under HOME).
: >"$WORK/plain"
run_in "$WORK/plain/cache" "$WORK/unwritable.csv"
same "$WORK/cold.csv" "$WORK/unwritable.csv"
mkdir "$WORK/home"
HOME=$WORK/home run_in off "$WORK/off.csv"
same "$WORK/cold.csv" "$WORK/off.csv"
[ -z "$(ls -A "$WORK/home")" ] || fail "OTC_CACHE_DIR=off wrote under HOME"

# The default: $XDG_CACHE_HOME/otc/jit. Over OTC_CACHE_MAX_MB, the least recently used
# entries go first (three old 600 kB entries, a 1 MB limit).
X=$WORK/xdg
mkdir -p "$X/otc/jit"
for old in 1 2 3; do
    head -c 600000 /dev/zero >"$X/otc/jit/old$old.otcobj"
    touch -d "2020-01-0$old" "$X/otc/jit/old$old.otcobj"
done
env -u OTC_CACHE_DIR XDG_CACHE_HOME=$X OTC_CACHE_MAX_MB=1 "$OTC" run "$MODEL" --input "$DATA" \
    --drop species --jit -o "$WORK/xdg.csv" || fail "run with XDG_CACHE_HOME"
same "$WORK/cold.csv" "$WORK/xdg.csv"
[ ! -e "$X/otc/jit/old1.otcobj" ] && [ ! -e "$X/otc/jit/old2.otcobj" ] ||
    fail "the oldest entries were not evicted: $(ls "$X/otc/jit")"
[ -e "$X/otc/jit/old3.otcobj" ] || fail "evicted more than needed: $(ls "$X/otc/jit")"
[ "$(entries "$X" | wc -l)" = $((n + 1)) ] || fail "this run's entries: $(ls "$X/otc/jit")"
echo "jit_cache: ok"
