#!/bin/sh
# HyperNEAT whole runs (not a test: prints figures): the left-and-right retina (HyperNEAT-LEO:
# examples/neat/retina.ini's one AND output with and without its LEO locality seed and with
# ES-HyperNEAT placing the hidden nodes; examples/neat/retina_sides.ini's two outputs, left
# and right object, with and without the layer input; examples/neat/retina_cct.ini's
# HyperNEAT-CCT, NSGA-II over the fitness and the substrate's squared link length, with the
# fitness-led value, with NSGA-II's rank value, with the LEO locality seed, and the same
# substrate under fitness selection; with the behavioural diversity objective as a third, under
# either value, at population 500 and 1000, and on retina:sides's substrate with the layer input)
# and with Baldwinian learning (examples/neat/retina_baldwin.ini: each painted substrate trained
# 100 Adam steps before its fitness is taken, or 20, or without the locality seed; for retina,
# retina:or and retina:sides's substrate)
# and the visual task with fixed grids (also with Baldwinian learning: 10 Adam steps per genome)
# (scored again at 33x33 without further evolution) against ES-HyperNEAT (also with Baldwinian
# learning of the found network: visual_baldwin's 10 steps, and for the retina with ES
# retina_baldwin.ini's 100), over N seeds of at
# most G generations on one thread. A table: solve rate, mean evaluations (of all runs and of
# the solved ones), mean champion fitness, for the retina the champion's patterns right (of
# 256), for visual the paper's measure (the mean distance d
# in cells from the large box's centre to the most active output, over the 75 trials), seconds
# per run, and what the papers report or ran.
# Usage: bench/hyperneat_runs.sh [OTC] [N=5] [G=300] [ROWS=all | a list of retina
# retina_noseed retina_es sides sides_z sides_div cct cct_rank cct_seed cct_none cct_div
# cct_div_rank cct_div_500 cct_div_1000 baldwin baldwin_noseed baldwin_20 baldwin_or sides_baldwin
# visual visual_baldwin visual_es visual_es_baldwin retina_es_baldwin]
set -eu
otc=${1:-build/otc}
n=${2:-5} g=${3:-300} rows=${4:-all}
ex=$(dirname "$0")/../examples/neat
W=$(mktemp -d /tmp/otc_hyperneat_bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
sed 's/^hidden_grids .*/evolvable_substrate = true/; s/^leo .*/leo = false/; /^leo_seed /d;
     s/^num_outputs .*/num_outputs = 2/' "$ex/retina.ini" >"$W/retina_es.ini"
sed '/^leo_seed /d' "$ex/retina.ini" >"$W/retina_noseed.ini"
sed 's/^num_inputs .*/num_inputs = 6/; $a\
layer_input = true' "$ex/retina_sides.ini" >"$W/sides_z.ini"
sed 's/^objective_probability .*/&\
nsga2_value = rank/' "$ex/retina_cct.ini" >"$W/cct_rank.ini"
sed 's/^leo .*/&\
leo_seed = locality_x/' "$ex/retina_cct.ini" >"$W/cct_seed.ini"
sed '/^selection /d; /^objectives /d; /^objective_probability /d' "$ex/retina_cct.ini" >"$W/cct_none.ini"
sed 's/^objectives .*/objectives = fitness, substrate_length, diversity/' "$ex/retina_cct.ini" \
  >"$W/cct_div.ini"
sed 's/^objective_probability .*/&\
nsga2_value = rank/' "$W/cct_div.ini" >"$W/cct_div_rank.ini"
sed 's/^pop_size .*/pop_size = 500/' "$W/cct_div.ini" >"$W/cct_div_500.ini"
sed 's/^pop_size .*/pop_size = 1000/' "$W/cct_div.ini" >"$W/cct_div_1000.ini"
sed '/^leo_seed /d' "$ex/retina_baldwin.ini" >"$W/baldwin_noseed.ini"
sed 's/^train_steps .*/train_steps = 20/' "$ex/retina_baldwin.ini" >"$W/baldwin_20.ini"
cp "$ex/visual.ini" "$W/visual_baldwin.ini"
printf '\n[Hybrid]\ntrain_steps = 10\nbatch_size = 75\nlearning_rate = 0.1\ninheritance = baldwinian\n' \
  >>"$W/visual_baldwin.ini"
cp "$W/retina_es.ini" "$W/retina_es_baldwin.ini"
sed -n '/^\[Hybrid\]/,$p' "$ex/retina_baldwin.ini" >>"$W/retina_es_baldwin.ini"
cp "$ex/visual_es.ini" "$W/visual_es_baldwin.ini"
sed -n '/^\[Hybrid\]/,$p' "$W/visual_baldwin.ini" >>"$W/visual_es_baldwin.ini"
cp "$ex/retina_sides.ini" "$W/sides_baldwin.ini"
sed -n '/^\[Hybrid\]/,$p' "$ex/retina_baldwin.ini" >>"$W/sides_baldwin.ini"
sed 's/^reset_on_extinction .*/&\
selection = nsga2\
objectives = fitness, substrate_length, diversity\
objective_probability = 0.25/' "$W/sides_z.ini" >"$W/sides_div.ini"

# What the papers report or ran, beside each row (not checked against the papers themselves
# where it says so: the figures were not at hand).
retina_paper="AHNI (Coleman) reproducing the LEO paper: 4x2 -> 4x2 -> 4x1 -> 2x1, bipolar units, inputs +-3, pop 500, 2500 gens; the paper's solve rates not at hand"
cct_paper="Huizinga, Mouret and Clune 2014 (HyperNEAT-CCT): 8-8-4-2-1, NSGA-II on performance, cost = summed squared length (p 0.25) and behavioural diversity; pop and solve rates not at hand"
visual_paper="Stanley et al. 2009 as the authors' code runs it: pop 100, 75 trials each scored max(0, 30 - d^2), champion re-sampled at 33x33; their d not at hand"

printf '%-34s %8s %12s %10s %10s %6s %9s %9s %7s  %s\n' run solved evaluations "(solved)" fitness right "d 11x11" "d 33x33" "s/run" "papers"

# row NAME LABEL CONFIG TASK PAPER [OPTIONS]: N runs on one thread, summarised from otc's first
# output line, its measure line (visual: d; retina: patterns right) and its re-evaluation line
# (--reevaluate)
row() {
  case " $rows " in *" all "* | *" $1 "*) ;; *) return 0 ;; esac
  : >"$W/out"
  : >"$W/d"
  : >"$W/re"
  : >"$W/right"
  s=1 t0=$(date +%s.%N)
  while [ "$s" -le "$n" ]; do
    "$otc" evolve "$3" --task "$4" --seed "$s" --threads 1 --generations "$g" ${6:-} \
      2>/dev/null >"$W/one" || true
    head -1 "$W/one" >>"$W/out"
    grep 'champion mean distance' "$W/one" >>"$W/d" || true
    grep 'champion patterns right' "$W/one" >>"$W/right" || true
    grep 're-evaluated' "$W/one" >>"$W/re" || true
    s=$((s + 1))
  done
  t1=$(date +%s.%N)
  d=$(awk '{ v = $0; sub(/.*= /, "", v); t += v; k++ } END { if (k) printf "%.3f", t / k; else printf "-" }' "$W/d")
  right=$(awk '{ v = $0; sub(/.*= /, "", v); t += v; k++ } END { if (k) printf "%.1f", t / k; else printf "-" }' "$W/right")
  d33=$(awk '{ v = $0; if (!sub(/.*= /, "", v)) next; t += v; k++ } END { if (k) printf "%.3f", t / k; else printf "-" }' "$W/re")
  awk -v label="$2" -v t0="$t0" -v t1="$t1" -v d="$d" -v right="$right" -v d33="$d33" -v paper="$5" '
    { k++; ev = $0; sub(/ evaluations.*/, "", ev); sub(/.* /, "", ev)
      f = $0; sub(/.*champion fitness /, "", f); sub(/,.*/, "", f)
      ok += ($0 ~ /: solved after/); tev += ev; tf += f
      if ($0 ~ /: solved after/) sev += ev }
    END { printf "%-34s %8s %12.0f %10s %10.4g %6s %9s %9s %7.1f  %s\n", label, ok "/" k,
                 tev / k, ok ? sprintf("%.0f", sev / ok) : "-", tf / k, right, d, d33, (t1 - t0) / k, paper }' "$W/out"
}

row retina "retina AND (LEO, locality seed)" "$ex/retina.ini" retina "$retina_paper"
row retina_noseed "retina AND (LEO, no seed)" "$W/retina_noseed.ini" retina "$retina_paper"
row retina_es "retina AND (ES-HyperNEAT)" "$W/retina_es.ini" retina "$retina_paper"
row sides "retina:sides (LEO, locality seed)" "$ex/retina_sides.ini" retina:sides "$retina_paper"
row sides_z "retina:sides (the same, z1 z2)" "$W/sides_z.ini" retina:sides "$retina_paper"
row sides_div "retina:sides (z1 z2, CCT + diversity)" "$W/sides_div.ini" retina:sides "$cct_paper"
row cct "retina AND (HyperNEAT-CCT)" "$ex/retina_cct.ini" retina "$cct_paper"
row cct_rank "retina AND (CCT, NSGA-II rank)" "$W/cct_rank.ini" retina "$cct_paper"
row cct_seed "retina AND (CCT, locality seed)" "$W/cct_seed.ini" retina "$cct_paper"
row cct_none "retina AND (8-8-4-2-1, fitness)" "$W/cct_none.ini" retina "$cct_paper"
row cct_div "retina AND (CCT + diversity)" "$W/cct_div.ini" retina "$cct_paper"
row cct_div_rank "retina AND (CCT + diversity, rank)" "$W/cct_div_rank.ini" retina "$cct_paper"
row cct_div_500 "retina AND (CCT + diversity, pop 500)" "$W/cct_div_500.ini" retina "$cct_paper"
row cct_div_1000 "retina AND (CCT + diversity, pop 1000)" "$W/cct_div_1000.ini" retina "$cct_paper"
row baldwin "retina AND (LEO, seed, Baldwinian)" "$ex/retina_baldwin.ini" retina "$retina_paper"
row baldwin_noseed "retina AND (LEO, no seed, Baldwinian)" "$W/baldwin_noseed.ini" retina "$retina_paper"
row baldwin_20 "retina AND (Baldwinian, 20 steps)" "$W/baldwin_20.ini" retina "$retina_paper"
row baldwin_or "retina:or (the same)" "$ex/retina_baldwin.ini" retina:or "$retina_paper"
row sides_baldwin "retina:sides (LEO, seed, Baldwinian)" "$W/sides_baldwin.ini" retina:sides "$retina_paper"
row visual "visual 11x11 (grids), 33x33 again" "$ex/visual.ini" visual "$visual_paper" "--reevaluate visual:33"
row visual_baldwin "visual 11x11, Baldwinian, 33x33 again" "$W/visual_baldwin.ini" visual "$visual_paper" "--reevaluate visual:33"
row visual_es "visual 11x11 (ES-HyperNEAT)" "$ex/visual_es.ini" visual "$visual_paper"
row visual_es_baldwin "visual 11x11 (ES, Baldwinian)" "$W/visual_es_baldwin.ini" visual "$visual_paper"
row retina_es_baldwin "retina AND (ES, Baldwinian)" "$W/retina_es_baldwin.ini" retina "$retina_paper"
