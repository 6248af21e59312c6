#!/bin/bash
# The exec: task's child processes: none outlives otc (normal end, SIGTERM mid-run), an
# episode that never says done ends at [Task] max_steps, and start-up has its own timeout.
# Usage: exec_processes.sh OTC SOURCE_DIR CASE
set -u
OTC=$1 SRC=$2 CASE=$3
# The system's python3 first: a version manager's shim costs a second per start.
PY=$(command -v /usr/bin/python3 || command -v python3) || { echo "no python3"; exit 77; }
command -v pgrep > /dev/null || { echo "no pgrep"; exit 77; }
T=$(mktemp -d)
MARK="otc_exec_marker_$$_$RANDOM" # in every environment's command line, for pgrep
cleanup() { pkill -KILL -f "$MARK" 2> /dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
# evolve exits 0 when solved, 1 when not (both are a finished run here).
ran() { "$@"; [ $? -le 1 ]; }
CFG=$SRC/tests/neat_python/configs/xor_config-feedforward

# XOR over the protocol; forks a grandchild that sleeps (it inherits the group), and with
# SLOW=1 takes its time per step so that a run is still going when otc is signalled.
cat > "$T/env.py" << 'PY'
import os, sys, time
if os.fork() == 0:
    time.sleep(300); os._exit(0)
slow = os.environ.get("SLOW") == "1"
C = [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)]; s = 0
for l in sys.stdin:
    w, *a = l.split()
    if slow: time.sleep(0.05)
    if w == "reset": s = 0; print("obs 0 0", flush=True)
    else:
        s += 1; print("step 0 1" if s == 4 else "step 0 0 %d %d" % C[s][0], flush=True)
PY
left() { pgrep -f "$MARK" | wc -l; }

case $CASE in
normal_end)
    ran "$OTC" evolve "$CFG" --task "exec:$PY $T/env.py $MARK" --generations 1 --threads 2 \
        --seed 1 --out "$T/x.otm" > /dev/null 2> "$T/err" || { cat "$T/err"; fail "evolve failed"; }
    sleep 0.5
    [ "$(left)" = 0 ] || fail "$(left) processes left after a normal end"
    ;;
sigterm | sigint)
    sig=${CASE^^}
    set -m # job control: a background job of a script would otherwise ignore SIGINT
    SLOW=1 "$OTC" evolve "$CFG" --task "exec:$PY $T/env.py $MARK" --generations 1000 \
        --threads 2 --seed 1 --out "$T/x.otm" > /dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do [ "$(left)" -ge 4 ] && break; sleep 0.1; done
    [ "$(left)" -ge 4 ] || fail "the environments did not start"
    kill -"${sig#SIG}" $pid
    wait $pid
    rc=$?
    set +m
    [ $rc -ne 0 ] || fail "otc exited 0 after $sig"
    sleep 0.5
    [ "$(left)" = 0 ] || fail "$(left) processes left after $sig of otc (exit $rc)"
    ;;
max_steps)
    # Never says done: each episode ends at max_steps, scored so far (1 per step).
    cat > "$T/forever.py" << 'PY'
import sys
for l in sys.stdin:
    print("obs 0 0" if l.startswith("reset") else "step 1 0 0 0", flush=True)
PY
    sed 's/^\[DefaultGenome\]/[Task]\nmax_steps = 50\n\n[DefaultGenome]/' "$CFG" > "$T/cfg"
    grep -q '^max_steps = 50' "$T/cfg" || fail "could not write the config"
    timeout 60 "$OTC" evolve "$T/cfg" --task "exec:$PY $T/forever.py $MARK" --generations 1 \
        --threads 1 --seed 1 --out "$T/x.otm" > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc -le 1 ] || { cat "$T/err"; fail "exit $rc"; }
    grep -q "champion fitness 50," "$T/out" || { cat "$T/out"; fail "fitness is not the 50 steps' rewards"; }
    sed 's/^\[DefaultGenome\]/[Task]\nmax_steps = 0\n\n[DefaultGenome]/' "$CFG" > "$T/cfg0"
    "$OTC" evolve "$T/cfg0" --task "exec:$PY $T/forever.py $MARK" --generations 1 \
        --out "$T/x.otm" > /dev/null 2> "$T/err"
    rc=$?
    [ $rc = 2 ] && grep -q "max_steps" "$T/err" || { cat "$T/err"; fail "max_steps = 0: exit $rc"; }
    ;;
startup)
    # 1.5 s to start, then instant answers: fine with exec_timeout = 1 (start-up has its own).
    cat > "$T/slowstart.py" << 'PY'
import sys, time
time.sleep(1.5)
C = [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)]; s = 0
for l in sys.stdin:
    w, *a = l.split()
    if w == "reset": s = 0; print("obs 0 0", flush=True)
    else:
        s += 1; print("step 0 1" if s == 4 else "step 0 0 %d %d" % C[s][0], flush=True)
PY
    sed 's/^\[DefaultGenome\]/[Task]\nexec_timeout = 1\n\n[DefaultGenome]/' "$CFG" > "$T/cfg"
    ran "$OTC" evolve "$T/cfg" --task "exec:$PY $T/slowstart.py $MARK" --generations 1 \
        --threads 2 --seed 1 --out "$T/x.otm" > /dev/null 2> "$T/err" || { cat "$T/err"; fail "start-up counted against exec_timeout"; }
    ;;
threads)
    # More threads than cores: capped, and said so.
    ran "$OTC" evolve "$CFG" --task "exec:$PY $T/env.py $MARK" --generations 1 --threads 1000 \
        --seed 1 --out "$T/x.otm" > /dev/null 2> "$T/err" || { cat "$T/err"; fail "evolve failed"; }
    grep -q "threads" "$T/err" || { cat "$T/err"; fail "no word on the thread cap"; }
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
echo "ok $CASE"
