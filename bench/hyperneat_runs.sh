#!/bin/sh
# HyperNEAT whole runs (not a test: prints figures): the left-and-right retina (HyperNEAT-LEO,
# examples/neat/retina.ini, and the same CPPN layout with ES-HyperNEAT placing the hidden
# nodes) and the visual task with fixed grids against ES-HyperNEAT, over N seeds of at most G
# generations: solve rate, mean evaluations, mean champion fitness, seconds per run.
# Usage: bench/hyperneat_runs.sh [OTC] [N=5] [G=300]
set -eu
otc=${1:-build/otc}
n=${2:-5} g=${3:-300}
ex=$(dirname "$0")/../examples/neat
W=$(mktemp -d /tmp/otc_hyperneat_bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
sed 's/^hidden_grids .*/evolvable_substrate = true/; s/^leo .*/leo = false/; /^leo_seed /d;
     s/^num_outputs .*/num_outputs = 2/' "$ex/retina.ini" >"$W/retina_es.ini"

# row LABEL CONFIG TASK: N runs on one thread, summarised from otc's first output line
row() {
  : >"$W/out"
  s=1 t0=$(date +%s.%N)
  while [ "$s" -le "$n" ]; do
    "$otc" evolve "$2" --task "$3" --seed "$s" --threads 1 --generations "$g" 2>/dev/null |
      head -1 >>"$W/out" || true
    s=$((s + 1))
  done
  t1=$(date +%s.%N)
  awk -v label="$1" -v t0="$t0" -v t1="$t1" '
    { k++; ev = $0; sub(/ evaluations.*/, "", ev); sub(/.* /, "", ev)
      f = $0; sub(/.*champion fitness /, "", f); sub(/,.*/, "", f)
      ok += ($0 ~ /: solved after/); tev += ev; tf += f }
    END { printf "%-28s solved %d/%d  mean evaluations %.0f  mean champion fitness %.4g  %.1f s/run\n",
                 label, ok, k, tev / k, tf / k, (t1 - t0) / k }' "$W/out"
}

row "retina (LEO, grids)" "$ex/retina.ini" retina
row "retina (ES-HyperNEAT)" "$W/retina_es.ini" retina
row "visual 11x11 (grids)" "$ex/visual.ini" visual
row "visual 11x11 (ES-HyperNEAT)" "$ex/visual_es.ini" visual
