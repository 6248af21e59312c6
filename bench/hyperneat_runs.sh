#!/bin/sh
# HyperNEAT whole runs (not a test: prints figures): the left-and-right retina (HyperNEAT-LEO,
# examples/neat/retina.ini with and without its LEO locality seed, and the same CPPN layout
# with ES-HyperNEAT placing the hidden nodes) and the visual task with fixed grids (scored
# again at 33x33 without further evolution) against ES-HyperNEAT, over N seeds of at most G
# generations: solve rate, mean evaluations, mean champion fitness (visual: mean d^2 = 200 -
# fitness), seconds per run.
# Usage: bench/hyperneat_runs.sh [OTC] [N=5] [G=300] [ROWS=all | a list of retina retina_noseed
# retina_es visual visual_es]
set -eu
otc=${1:-build/otc}
n=${2:-5} g=${3:-300} rows=${4:-all}
ex=$(dirname "$0")/../examples/neat
W=$(mktemp -d /tmp/otc_hyperneat_bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
sed 's/^hidden_grids .*/evolvable_substrate = true/; s/^leo .*/leo = false/; /^leo_seed /d;
     s/^num_outputs .*/num_outputs = 2/' "$ex/retina.ini" >"$W/retina_es.ini"
sed '/^leo_seed /d' "$ex/retina.ini" >"$W/retina_noseed.ini"

# row NAME LABEL CONFIG TASK [OPTIONS]: N runs on one thread, summarised from otc's first
# output line (and its re-evaluation line with --reevaluate)
row() {
  case " $rows " in *" all "* | *" $1 "*) ;; *) return 0 ;; esac
  : >"$W/out"
  : >"$W/re"
  s=1 t0=$(date +%s.%N)
  while [ "$s" -le "$n" ]; do
    "$otc" evolve "$3" --task "$4" --seed "$s" --threads 1 --generations "$g" ${5:-} \
      2>/dev/null >"$W/one" || true
    head -1 "$W/one" >>"$W/out"
    grep 're-evaluated' "$W/one" >>"$W/re" || true
    s=$((s + 1))
  done
  t1=$(date +%s.%N)
  awk -v label="$2" -v t0="$t0" -v t1="$t1" '
    { k++; ev = $0; sub(/ evaluations.*/, "", ev); sub(/.* /, "", ev)
      f = $0; sub(/.*champion fitness /, "", f); sub(/,.*/, "", f)
      ok += ($0 ~ /: solved after/); tev += ev; tf += f
      if ($0 ~ /: solved after/) sev += ev }
    END { printf "%-30s solved %d/%d  mean evaluations %.0f (solved runs: %s)  mean champion fitness %.4g  %.1f s/run\n",
                 label, ok, k, tev / k, ok ? sprintf("%.0f", sev / ok) : "-", tf / k, (t1 - t0) / k }' "$W/out"
  if [ -s "$W/re" ]; then
    awk -v label="$2" '{ k++; f = $0; sub(/.*champion fitness /, "", f); sub(/[ ,].*/, "", f); tf += f
                         ok += ($0 ~ /solved/) }
      END { printf "%-30s   re-evaluated: solved %d/%d  mean champion fitness %.4g\n", label, ok, k, tf / k }' "$W/re"
  fi
}

row retina "retina (LEO, locality seed)" "$ex/retina.ini" retina
row retina_noseed "retina (LEO, no seed)" "$W/retina_noseed.ini" retina
row retina_es "retina (ES-HyperNEAT)" "$W/retina_es.ini" retina
row visual "visual 11x11 (grids)" "$ex/visual.ini" visual "--reevaluate visual:33"
row visual_es "visual 11x11 (ES-HyperNEAT)" "$ex/visual_es.ini" visual
