#!/bin/sh
# Selection beyond fitness (not a test: prints figures). XOR under NSGA-II with objectives
# fitness, connections against the same config under fitness alone, over N seeds: solve rate,
# mean evaluations, mean enabled connections of the champion. Then the hard maze under novelty
# search against fitness over M seeds of at most G generations of 250 (the paper's 250,000
# evaluations are G = 1000): solve rate and mean evaluations of the runs that solved.
# Usage: bench/neat_selection.sh [OTC] [N=100] [M=4] [G=200] [WHAT=all]
# WHAT: all, xor, dpnv (the double pole without velocities, N seeds of at most 200
# generations of 1,000, under fitness and under nsga2 with fitness, connections), or one of maze:hard-novelty, maze:hard-fitness, maze:medium-novelty,
# maze:medium-fitness (one batch, so batches can run side by side); each run's summary line
# is also appended to $OTC_BENCH_LOG when set. (Defaults shortened; the paper's maze figures
# need M = 40, G = 1000: hours on one core.)
set -eu
otc=${1:-build/otc}
n=${2:-100} m=${3:-4} g=${4:-200} what=${5:-all}
ex=$(dirname "$0")/../examples/neat
W=$(mktemp -d /tmp/otc_selection_bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
sed 's/^no_fitness_termination = true/&\nselection = nsga2\nobjectives = fitness, connections/' \
  "$ex/xor.ini" >"$W/xor_nsga2.ini"
sed 's/^no_fitness_termination = true/&\nselection = nsga2\nobjectives = fitness, connections/' \
  "$ex/dpnv.ini" >"$W/dpnv_nsga2.ini"
sed '/^selection /d; /^novelty_k /d' "$ex/maze.ini" >"$W/maze_fitness.ini"

# runs LABEL CONFIG TASK SEEDS GENERATIONS: one line of figures from otc's summary lines
runs() {
  label=$1 cfg=$2 task=$3 seeds=$4 gens=$5
  : >"$W/out"
  s=1
  while [ "$s" -le "$seeds" ]; do
    "$otc" evolve "$cfg" --task "$task" --seed "$s" --threads 1 --generations "$gens" \
      2>/dev/null | head -1 >"$W/one" || true
    cat "$W/one" >>"$W/out"
    [ -z "${OTC_BENCH_LOG:-}" ] || sed "s/^/$label seed $s: /" "$W/one" >>"$OTC_BENCH_LOG"
    s=$((s + 1))
  done
  awk -v label="$label" '
    { n++; ev = $0; sub(/ evaluations.*/, "", ev); sub(/.* /, "", ev)
      c = $0; sub(/ enabled connection.*/, "", c); sub(/.* /, "", c)
      h = $0; sub(/ hidden node.*/, "", h); sub(/.* /, "", h); th += h
      if ($0 ~ /: solved after/) { ok++; sev += ev }
      tev += ev; tc += c }
    END { printf "%-26s solved %d/%d  mean evaluations %.0f  mean enabled connections %.2f  mean hidden nodes %.2f  mean evaluations of the solved %.0f\n",
                 label, ok, n, tev / n, tc / n, th / n, ok ? sev / ok : 0 }' "$W/out"
}

case $what in all | xor)
  runs "xor fitness" "$ex/xor.ini" xor "$n" 300
  runs "xor nsga2 (fit, conns)" "$W/xor_nsga2.ini" xor "$n" 300 ;;
esac
case $what in all | dpnv)
  runs "dpnv fitness" "$ex/dpnv.ini" dpnv "$n" 200
  runs "dpnv nsga2 (fit, conns)" "$W/dpnv_nsga2.ini" dpnv "$n" 200 ;;
esac
for maze in hard medium; do
  case $what in all | "maze:$maze-novelty")
    runs "maze:$maze novelty" "$ex/maze.ini" "maze:$maze" "$m" "$g" ;;
  esac
  case $what in all | "maze:$maze-fitness")
    runs "maze:$maze fitness" "$W/maze_fitness.ini" "maze:$maze" "$m" "$g" ;;
  esac
done
