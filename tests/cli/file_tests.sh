#!/usr/bin/env bash
# End-to-end tests of where otc's files go: outputs naming a device, a FIFO or a symbolic link,
# outputs that name an input, endless or oversized inputs, emit-c's two files as a unit, stale
# temporaries, long error messages.
# Usage: file_tests.sh OTC_BINARY SOURCE_DIR MODELS_DIR CASE   (one ctest test per CASE)
set -u

OTC=$1
SRC=$2
MODELS=$3
CASE=$4
IRIS=$MODELS/iris_mlp.otm
IRIS_CSV=$SRC/examples/data/iris.csv
XOR_INI=$SRC/examples/neat/xor.ini
WORK=$(mktemp -d "${TMPDIR:-/tmp}/otc_files_${CASE}.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1

. "$SRC/tests/cli/check_lib.sh" # failures, fail, run, err_has
kind() { stat -c %F "$1"; }
no_temporaries() {
    if ls -a "$1" | grep -q '\.tmp'; then fail "temporaries left in $1: $(ls -a "$1")"; fi
}
have_llvm() { ! "$OTC" compile "$IRIS" --emit-llvm /dev/null 2>&1 | grep -q 'without LLVM'; }
printf 'a,b\n0,0\n0,1\n1,0\n1,1\n' >xor.csv

case_output_device() {
    # A device is written in place: a private /dev/full (root only) fails with ENOSPC and
    # stays a device; a FIFO gets the data.
    if [ "$(id -u)" = 0 ]; then
        local cmds=(
            "run $IRIS --input $IRIS_CSV --drop species -o DEV"
            "train $IRIS --data $IRIS_CSV --target species --epochs 1 --out DEV"
            "train $IRIS --data $IRIS_CSV --target species --epochs 1 --out t.otm --plot DEV"
            "evolve $XOR_INI --task xor --generations 2 --threads 1 --out DEV"
            "evolve $XOR_INI --task xor --generations 2 --threads 1 --stats DEV"
            "viz $IRIS -o DEV --format dot"
            "compile $IRIS --emit-c c --plan-dot DEV"
            "bench $IRIS --batch 1 --export DEV")
        have_llvm && cmds+=("compile $IRIS --emit-llvm DEV" "compile $IRIS --emit-obj DEV")
        local c
        for c in "${cmds[@]}"; do
            rm -f myfull
            mknod myfull c 1 7 || {
                fail "mknod failed"
                return
            }
            # shellcheck disable=SC2086 # the command is split into words on purpose
            run 2 ${c//DEV/myfull}
            err_has "myfull"
            err_has "No space left on device"
            [ "$(kind myfull)" = "character special file" ] || fail "$c: myfull is now $(kind myfull)"
        done
        rm -f myfull
        no_temporaries .
    else
        echo "device cases skipped: mknod needs root"
    fi
    mkfifo pipe
    cat pipe >from_pipe &
    run 0 run "$IRIS" --input "$IRIS_CSV" --drop species -o pipe
    wait
    [ "$(wc -l <from_pipe)" = 151 ] || fail "the FIFO's reader got $(wc -l <from_pipe) lines"
    [ "$(kind pipe)" = "fifo" ] || fail "pipe is now $(kind pipe)"
}

case_output_symlink() {
    # A link is kept and its target replaced; a dangling link's target is created.
    echo old >target.csv
    ln -s target.csv link.csv
    run 0 run "$IRIS" --input "$IRIS_CSV" --drop species -o link.csv
    [ -L link.csv ] || fail "link.csv is no longer a symbolic link"
    [ "$(wc -l <target.csv)" = 151 ] || fail "target.csv not written through the link"
    ln -s made.csv dangling.csv
    run 0 run "$IRIS" --input "$IRIS_CSV" --drop species -o dangling.csv
    [ -L dangling.csv ] && [ "$(wc -l <made.csv)" = 151 ] || fail "dangling link's target not made"
    no_temporaries .
}

# same OPTIONS_IN_MESSAGE FILE CMD...: exit 2, both options named, FILE unchanged.
same() {
    local a=$1 b=$2 file=$3
    shift 3
    cp "$file" before
    run 2 "$@"
    err_has "$a and $b name the same file"
    cmp -s before "$file" || fail "$file changed by: otc $*"
}

case_output_over_input() {
    cp "$IRIS" m.otm
    cp "$IRIS_CSV" d.csv
    cp "$XOR_INI" x.ini
    ln -s d.csv d_link.csv
    ln d.csv d_hard.csv
    same --output --input d.csv run m.otm --input d.csv -o d.csv --drop species
    same --output --input d.csv run m.otm --input d_link.csv -o d.csv --drop species
    same --output --input d.csv run m.otm --input d.csv -o ./d_hard.csv --drop species
    same --output MODEL m.otm run m.otm --input d.csv -o m.otm --drop species
    same --out --data d.csv train m.otm --data d.csv --target species --out d.csv
    same --plot MODEL m.otm train m.otm --data d.csv --target species --out t.otm --plot m.otm
    same --output MODEL m.otm viz m.otm -o m.otm --format dot
    same --export MODEL m.otm bench m.otm --export m.otm
    same --plan-dot MODEL m.otm compile m.otm --emit-c c --plan-dot m.otm
    have_llvm && same --emit-llvm MODEL m.otm compile m.otm --emit-llvm m.otm
    same --out CONFIG x.ini evolve x.ini --task xor --generations 1 --out x.ini
    same --stats CONFIG x.ini evolve x.ini --task xor --generations 1 --stats x.ini
    same --plot "--task csv:" xor.csv evolve x.ini --task csv:xor.csv --generations 1 --plot xor.csv
    # two outputs onto one file
    run 2 train m.otm --data d.csv --target species --out t.otm --plot t.otm
    err_has "--plot and --out name the same file"
    [ ! -e t.otm ] || fail "t.otm written although refused"
    # checkpoints: resuming from ck-1.json and checkpointing to ck-2.. is fine; a checkpoint
    # that would land on the file resumed from is refused.
    run 1 evolve x.ini --task xor --seed 3 --generations 1 --threads 1 --checkpoint-every 1 \
        --checkpoint-prefix ck-
    [ -s ck-1.json ] || fail "no ck-1.json"
    run 1 evolve x.ini --task xor --seed 3 --generations 2 --threads 1 --checkpoint-every 1 \
        --checkpoint-prefix ck- --resume ck-1.json
    [ -s ck-2.json ] || fail "no ck-2.json"
    cp ck-1.json r-2.json
    same --checkpoint-prefix --resume r-2.json evolve x.ini --task xor --generations 2 \
        --threads 1 --checkpoint-every 1 --checkpoint-prefix r- --resume r-2.json
}

case_derived_outputs() {
    # Outputs a command derives (emit-c's DIR/NAME.c, the object's header, checkpoints) are
    # checked like the named ones: against every other output and every input, files that do
    # not exist yet included (by their normalised path), before anything is written.
    cp "$IRIS" m.otm
    cp "$XOR_INI" x.ini
    run 2 compile m.otm --emit-c cd --name m --plan-dot cd/m.c
    err_has "--plan-dot and --emit-c name the same file"
    [ ! -e cd ] || fail "cd/ written although refused"
    run 2 compile m.otm --emit-c cd --name m --plan-dot ./cd/sub/../m.h
    err_has "--plan-dot and --emit-c name the same file"
    if have_llvm; then
        cp m.otm net.h
        same "--emit-obj's header" MODEL net.h compile net.h --emit-obj net
        run 2 compile m.otm --emit-obj y.o --emit-asm y.h
        err_has "--emit-obj's header and --emit-asm name the same file"
        [ ! -e y.o ] && [ ! -e y.h ] || fail "y.o or y.h written although refused"
        run 2 compile m.otm --emit-obj o/../z.h
        err_has "--emit-obj's header and --emit-obj name the same file"
    fi
    # --front's named files against the other outputs
    run 2 evolve x.ini --task xor --seed 1 --generations 2 --front fr --stats fr/front.csv
    err_has "--front's front.csv and --stats name the same file"
    run 2 evolve x.ini --task xor --seed 1 --generations 2 --front fr --out ./fr/chosen.otm
    err_has "--front's chosen.otm and --out name the same file"
    [ ! -e fr ] || fail "fr/ written although refused"
    # a checkpoint against --out, --stats, --plot (the input side is output_over_input's)
    local o
    for o in --out --stats --plot; do
        run 2 evolve x.ini --task xor --seed 1 --generations 3 --threads 1 --checkpoint-every 1 \
            --checkpoint-prefix "" $o 2.json
        err_has "--checkpoint-prefix and $o name the same file (2.json)"
        [ ! -e 1.json ] && [ ! -e 2.json ] || fail "files written although refused ($o)"
    done
    run 2 evolve x.ini --task xor --seed 1 --generations 4 --threads 1 --checkpoint-every 2 \
        --checkpoint-prefix ck/g --out ck/../ck/g4.json
    err_has "checkpoint of generation 4"
    # generation 3 is not a multiple of 2: no clash, the run goes ahead
    run 1 evolve x.ini --task xor --seed 1 --generations 4 --threads 1 --checkpoint-every 2 \
        --checkpoint-prefix g --out g3.json
    [ -s g2.json ] && [ -s g3.json ] || fail "g2.json or g3.json missing"
    # an output that cannot be written is refused before the run, not after it (the run
    # once went ahead and failed at the end, --out written and --front not)
    touch notadir
    run 2 evolve x.ini --task xor --seed 1 --generations 3 --threads 1 --checkpoint-every 1 \
        --checkpoint-prefix pre- --front notadir --out ok.otm
    err_has "--front's front.csv notadir/front.csv: cannot be written there: Not a directory"
    [ ! -e pre-1.json ] && [ ! -e ok.otm ] || fail "the run went ahead with --front notadir"
    run 2 evolve x.ini --task xor --seed 1 --generations 3 --threads 1 --checkpoint-every 1 \
        --checkpoint-prefix pre- --out nodir/ok.otm
    err_has "--out nodir/ok.otm: cannot be written there"
    [ ! -e pre-1.json ] || fail "the run went ahead with --out nodir/ok.otm"
    run 2 train m.otm --data "$SRC/examples/data/iris.csv" --target species --out nodir/t.otm
    err_has "--out nodir/t.otm: cannot be written there"
}

case_unbounded_input() {
    # An endless input is refused after a bounded read, naming the file.
    run 2 run "$IRIS" --input /dev/zero
    err_has "/dev/zero: not a text file"
    run 2 train "$IRIS" --data /dev/zero --target species --out t.otm
    err_has "/dev/zero: not a text file"
    run 2 evolve "$XOR_INI" --task xor --resume /dev/zero
    err_has "/dev/zero: not a text file"
    run 2 evolve "$XOR_INI" --task csv:/dev/zero
    err_has "/dev/zero: not a text file"
    run 2 evolve /dev/zero --task xor
    err_has "/dev/zero: not a text file"
    run 2 summary /dev/zero
    err_has "/dev/zero: not a regular file"
    # a config over its 1 MiB limit (comments only, 1,100,000 bytes)
    { cat "$XOR_INI"; for ((i = 0; i < 11000; i++)); do printf '#%098d\n' 0; done; } >big.ini
    run 2 evolve big.ini --task xor
    err_has "big.ini: too large: more than 1 MiB"
    [ ! -e t.otm ] || fail "t.otm written after bad input"
}

case_emit_c_pair() {
    # The .h and .c land together or not at all.
    mkdir c
    echo "old h" >c/m.h
    mkdir c/m.c
    run 2 compile "$IRIS" --emit-c c --name m
    err_has "c/m.c: is a directory"
    [ "$(cat c/m.h)" = "old h" ] || fail "m.h changed although m.c could not be written"
    no_temporaries c
    if [ "$(id -u)" = 0 ]; then
        rmdir c/m.c
        mknod c/m.c c 1 7
        run 2 compile "$IRIS" --emit-c c --name m
        err_has "c/m.c: write failed: No space left on device"
        [ "$(cat c/m.h)" = "old h" ] || fail "m.h changed although m.c hit a full disk"
        no_temporaries c
        rm c/m.c
    else
        rmdir c/m.c
    fi
    run 0 compile "$IRIS" --emit-c c --name m
    grep -q 'm_forward' c/m.h && grep -q 'm_forward' c/m.c || fail "m.h and m.c not written"
    no_temporaries c
}

case_stale_temporaries() {
    # A temporary left by a process that is gone (killed mid-write) goes with the next write.
    bash -c 'exit 0' &
    local dead=$!
    wait $dead
    echo partial >"out.csv.tmp-$dead-0"
    echo partial >"out.csv.tmp-$$-0" # a live process's: kept
    run 0 run "$IRIS" --input "$IRIS_CSV" --drop species -o out.csv
    [ ! -e "out.csv.tmp-$dead-0" ] || fail "stale temporary not removed"
    [ -e "out.csv.tmp-$$-0" ] || fail "a live process's temporary was removed"
}

case_long_error() {
    # An error message far over 1 KiB is kept whole up to a cut that ends in "...", between
    # characters, never inside a UTF-8 sequence.
    local dir i
    dir=$(printf 'é%.0s' $(seq 1 100)) # 200 bytes per component
    local path=.
    for ((i = 0; i < 70; i++)); do path+="/$dir"; done
    run 2 run "$IRIS" --input "$path/x.csv"
    [ "$(wc -c <err)" -gt 8000 ] || fail "error cut at $(wc -c <err) bytes"
    iconv -f UTF-8 -t UTF-8 err >/dev/null 2>&1 || fail "the error is not valid UTF-8"
    grep -q '\.\.\.' err || fail "no '...' where the message was cut"
}

if ! declare -F "case_$CASE" >/dev/null; then
    echo "no such case: $CASE" >&2
    exit 2
fi
"case_$CASE"
if [ "$failures" -gt 0 ]; then
    echo "$CASE: $failures check(s) failed" >&2
    exit 1
fi
echo "$CASE: ok"
