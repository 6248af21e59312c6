#!/bin/sh
# otc against neat-python on XOR, side by side in one run: each with its own XOR config
# (otc: examples/neat/xor.ini, the paper's parameters; neat-python: its examples/xor
# config-feedforward), whole runs in-process on one thread, evaluations counted alike.
# neat-python runs under CPython and, when Debian's pypy3 is installed, under PyPy too (the
# fair "fast Python" point; its JIT warms up within the first run).
# neat-python is not a dependency: pass a checkout (skipped, saying so, without one).
# Usage: bench/neat_vs_neat_python.sh NEAT_PYTHON_DIR [RUNS] [BUILD_DIR]
set -eu
np=${1:?usage: $0 NEAT_PYTHON_DIR [RUNS] [BUILD_DIR]}
runs=${2:-20}
build=${3:-build/release}
[ -f "$np/neat/__init__.py" ] || { echo "no neat-python checkout at $np: skipped"; exit 0; }
otc_out=$("$build/bench/neat_xor" "$runs" 1)
o_mean=$(echo "$otc_out" | awk '/^mean evaluations/ { print $5 }')
o_fail=$(echo "$otc_out" | awk '/^failures/ { print $2 }')
o_rate=$(echo "$otc_out" | sed -n 's/.*: \([0-9]*\) evaluations\/s$/\1/p')
o_med=$(echo "$otc_out" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
pythons=python3
command -v pypy3 > /dev/null && pythons="python3 pypy3"
echo "XOR, $runs runs each, one thread"
echo
echo "| | otc | neat-python | otc / neat-python |"
echo "|---|---:|---:|---:|"
for py in $pythons; do
    set -- $("$py" "$(dirname "$0")/neat_python_xor.py" "$np" "$runs" | tr ' ' '\n' | cut -d= -f2)
    p_mean=$2 p_fail=$3 p_rate=$4 p_med=$5
    awk -v a="$o_rate" -v b="$p_rate" -v py="$py" \
        'BEGIN { printf "| evaluations/s, whole loop (%s) | %d | %d | %.0fx |\n", py, a, b, a / b }'
    awk -v a="$o_med" -v b="$p_med" -v py="$py" \
        'BEGIN { printf "| median run, ms (%s) | %.2f | %.1f | %.0fx faster |\n", py, a, b, b / a }'
    echo "| mean evaluations to solution ($py) | $o_mean | $p_mean | |"
    echo "| failures ($py) | $o_fail | $p_fail | |"
done
