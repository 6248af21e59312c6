#!/bin/sh
# Scaling of `mpirun -n K otc evolve` (not a test: prints a table). For each task, the run
# without MPI and with K = 1, 2, 4 ranks (4 oversubscribes a 2-core machine), one thread per
# rank; time is the sum of the per-generation seconds rank 0 records (--stats), so mpirun's
# start-up is left out. Efficiency = evaluations/s at K / (K x evaluations/s without MPI).
# From the bytes and the per-genome cost of distribution it estimates the efficiency at 16 and
# 64 machines (Amdahl with rank 0's packing as the serial part).
# Usage: bench/neat_mpi.sh [OTC] (default build/release/otc)
set -eu
otc=${1:-build/release/otc}
ex=$(dirname "$0")/../examples
W=$(mktemp -d /tmp/otc_mpi_bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
sed 's/^pop_size .*/pop_size = 1000/' "$ex/neat/dpnv.ini" >"$W/dpnv1000.ini"
sed 's/^pop_size .*/pop_size = 1000/' "$ex/neat/xor.ini" >"$W/xor1000.ini"

# run K CONFIG TASK GENERATIONS -> "seconds evaluations bytes_sent bytes_received"
run() {
  k=$1 cfg=$2 task=$3 gens=$4
  if [ "$k" = 0 ]; then
    "$otc" evolve "$cfg" --task "$task" --seed 1 --threads 1 --generations "$gens" \
      --stats "$W/s.csv" >"$W/o.txt" 2>/dev/null || true
  else
    mpirun -n "$k" "$otc" evolve "$cfg" --task "$task" --seed 1 --threads 1 \
      --generations "$gens" --stats "$W/s.csv" >"$W/o.txt" 2>/dev/null || true
  fi
  secs=$(awk -F, 'NR > 1 { s += $NF } END { printf "%.4f", s }' "$W/s.csv")
  evals=$(awk -F, 'NR > 1 { e = $2 } END { print e }' "$W/s.csv")
  sent=$(sed -n 's/^mpi: [0-9]* ranks; \([0-9]*\) bytes sent, \([0-9]*\) received.*/\1 \2/p' "$W/o.txt")
  echo "$secs $evals ${sent:-0 0}"
}

printf '| task | K | seconds | evaluations/s | efficiency | bytes per generation | genomes per generation |\n'
printf '|---|---|---|---|---|---|---|\n'
for spec in "xor:$W/xor1000.ini:xor:30" "dpnv:$W/dpnv1000.ini:dpnv:10" \
            "hybrid csv:$ex/neat/circle_hybrid.ini:csv:$ex/data/circle.csv:4"; do
  name=${spec%%:*}; rest=${spec#*:}; cfg=${rest%%:*}; rest=${rest#*:}
  gens=${rest##*:}; task=${rest%:*}
  base=
  for k in 0 1 2 4; do
    set -- $(run $k "$cfg" "$task" "$gens")
    rate=$(awk -v s="$1" -v e="$2" 'BEGIN { printf "%.0f", e / s }')
    [ -z "$base" ] && base=$rate
    eff=$(awk -v r="$rate" -v b="$base" -v k="$k" 'BEGIN { if (k == 0) print "-"; else printf "%.2f", r / (b * k) }')
    bpg=$(awk -v b="$3" -v r="$4" -v g="$gens" 'BEGIN { printf "%.0f", (b + r) / g }')
    gpg=$(awk -v e="$2" -v g="$gens" 'BEGIN { printf "%.0f", e / g }')
    label=$k; [ "$k" = 0 ] && label="no MPI"
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$label" "$1" "$rate" "$eff" "$bpg" "$gpg"
    if [ "$k" = 2 ]; then eval "k2_$(echo "$name" | tr -cd 'a-z')=\"$1 $2 $3 $4\""; fi
    if [ "$k" = 0 ]; then eval "k0_$(echo "$name" | tr -cd 'a-z')=\"$1 $2\""; fi
  done
done

# The per-genome cost of distribution: XOR's evaluation costs about a microsecond, so the
# time K = 2 adds per genome sent over what the run without MPI took is the cost of packing,
# sending, receiving and unpacking one genome.
set -- $k0_xor $k2_xor
over=$(awk -v s0="$1" -v s2="$3" -v e="$2" 'BEGIN { d = (s2 - s0) / e * 1e6; if (d < 0) d = 0; printf "%.2f", d }')
echo
echo "distribution cost: ${over} us per genome (XOR, K = 2 against no MPI)"
set -- $k0_dpnv
echo "estimate (Amdahl: rank 0 packs every genome, the ranks share the evaluation):"
for K in 16 64; do
  awk -v s="$1" -v e="$2" -v c="$over" -v K="$K" 'BEGIN {
    t = s / e * 1e6;                  # us per dpnv genome, one thread
    sp = (t) / (t / K + c);           # speed-up over one process
    printf "  dpnv, population 1000, %d machines x 1 thread: %.1fx (efficiency %.0f%%)\n", K, sp, 100 * sp / K }'
done
