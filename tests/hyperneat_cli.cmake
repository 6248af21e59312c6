# HyperNEAT through `otc evolve`: --task visual saves a substrate model `otc run` takes and
# --reevaluate visual:33 scores the champion at 33x33 (both with the mean distance d); the
# retina's tasks run, retina:sides with the layer input too, the retina under HyperNEAT-CCT; a
# visual run's generations are the same whatever OpenBLAS's thread count; bad
# [Substrate] keys, a config without the section and a bad field size exit 2 naming the key;
# Baldwinian retina, visual and ES-HyperNEAT runs save their trained substrates (an ES run
# trained differs from the same run untrained), and Lamarckian inheritance and an optimizer
# other than adam exit 2 naming the key.
# Each case is one ctest test named hyperneat_cli_*.
find_program(OTC_HYPERNEAT_CLI_BASH bash)
if(TARGET otc_cli AND OTC_HYPERNEAT_CLI_BASH)
  set(otc ${PROJECT_BINARY_DIR}/otc)
  set(visual ${PROJECT_SOURCE_DIR}/examples/neat/visual.ini)
  set(visual_es ${PROJECT_SOURCE_DIR}/examples/neat/visual_es.ini)
  set(retina ${PROJECT_SOURCE_DIR}/examples/neat/retina.ini)
  set(retina_sides ${PROJECT_SOURCE_DIR}/examples/neat/retina_sides.ini)
  set(retina_cct ${PROJECT_SOURCE_DIR}/examples/neat/retina_cct.ini)
  set(retina_baldwin ${PROJECT_SOURCE_DIR}/examples/neat/retina_baldwin.ini)
  set(work ${CMAKE_CURRENT_BINARY_DIR}/hyperneat_cli)
  set(prelude "set -u; W=$(mktemp -d '${work}.XXXXXX') || exit 1; trap 'rm -rf \"$W\"' EXIT; \
expect() { want=$1; shift; \"$@\" >\"$W/out\" 2>\"$W/err\"; got=$?; if [ $got != $want ]; then \
echo \"exit $got, wanted $want: $*\"; cat \"$W/out\" \"$W/err\"; exit 1; fi; }; \
has() { grep -qF -- \"$2\" \"$W/$1\" || { echo \"$1 lacks '$2'\"; cat \"$W/out\" \"$W/err\"; exit 1; }; }; ")
  set(hyperneat_cli_cases
      visual_out_runs
      "expect 1 '${otc}' evolve '${visual}' --task visual --seed 1 --generations 2 --threads 1 --out \"$W/v.otm\" --reevaluate visual:33 && has out 'champion saved' && has out 'visual: champion mean distance d (cells) = ' && has out 'visual:33: champion fitness' && grep -F 'visual:33:' \"$W/out\" | grep -qF 'mean distance d (cells) = ' && expect 0 '${otc}' summary \"$W/v.otm\" && has out 'layer1.weight' && has out '[B,121]' && yes 0 | head -n 121 | paste -sd, > \"$W/x.csv\" && expect 0 '${otc}' run \"$W/v.otm\" --input \"$W/x.csv\" --no-header"
      bad_grid_exits_2
      "sed 's/^input_grid .*/input_grid = 11by11/' '${visual}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task visual && has err '[Substrate] input_grid: bad value' && has err 'b.ini:'"
      bad_threshold_exits_2
      "sed 's/^weight_threshold .*/weight_threshold = 1.5/' '${visual}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task visual && has err '[Substrate] weight_threshold'"
      cppn_inputs_mismatch_exits_2
      "sed 's/^num_inputs .*/num_inputs = 3/' '${visual}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task visual && has err '[DefaultGenome] num_inputs: a [Substrate] CPPN has 4 inputs'"
      no_substrate_exits_2
      "expect 2 '${otc}' evolve '${PROJECT_SOURCE_DIR}/examples/neat/xor.ini' --task visual && has err 'no [Substrate] section'"
      other_field_size_exits_2
      "expect 2 '${otc}' evolve '${visual}' --task visual:20 && has err 'visual:20'"
      bad_reevaluate_exits_2
      "expect 2 '${otc}' evolve '${visual}' --task visual --reevaluate visual:7 && has err '--reevaluate visual:7'"
      es_out_runs
      "sed 's/^pop_size .*/pop_size = 20/' '${visual_es}' > \"$W/e.ini\" && expect 1 '${otc}' evolve \"$W/e.ini\" --task visual --seed 2 --generations 2 --threads 2 --out \"$W/e.otm\" && has out 'champion saved' && expect 0 '${otc}' summary \"$W/e.otm\" && has out 'neuron' && yes 0 | head -n 121 | paste -sd, > \"$W/x.csv\" && expect 0 '${otc}' run \"$W/e.otm\" --input \"$W/x.csv\" --no-header"
      visual_same_for_any_blas_threads
      "expect 1 env OPENBLAS_NUM_THREADS=1 '${otc}' evolve '${visual}' --task visual --seed 1 --generations 2 --threads 1 --stats \"$W/s1.csv\" && expect 1 env OPENBLAS_NUM_THREADS=2 '${otc}' evolve '${visual}' --task visual --seed 1 --generations 2 --threads 1 --stats \"$W/s2.csv\" && cut -d, -f1-12 \"$W/s1.csv\" > \"$W/c1\" && cut -d, -f1-12 \"$W/s2.csv\" > \"$W/c2\" && cmp \"$W/c1\" \"$W/c2\""
      es_depths_exit_2
      "sed 's/^initial_depth .*/initial_depth = 5/' '${visual_es}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task visual && has err '[Substrate] initial_depth: 5 is deeper than maximum_depth 3' && has err 'b.ini'"
      es_band_exits_2
      "sed 's/^band_threshold .*/band_threshold = lots/' '${visual_es}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task visual && has err '[Substrate] band_threshold'"
      es_substrate_svg
      "sed 's/^pop_size .*/pop_size = 20/' '${visual_es}' > \"$W/e.ini\" && expect 1 '${otc}' evolve \"$W/e.ini\" --task visual --seed 1 --generations 2 --substrate-svg \"$W/s.svg\" && has out 'substrate picture saved' && has s.svg 'hidden node(s) placed' && has s.svg '</svg>'"
      substrate_svg_needs_substrate_exits_2
      "expect 2 '${otc}' evolve '${PROJECT_SOURCE_DIR}/examples/neat/xor.ini' --task xor --substrate-svg \"$W/s.svg\" && has err 'no [Substrate] section' && test ! -e \"$W/s.svg\""
      layered_substrate_svg
      "sed 's/^pop_size .*/pop_size = 20/' '${retina}' > \"$W/r.ini\" && expect 1 '${otc}' evolve \"$W/r.ini\" --task retina --seed 1 --generations 2 --substrate-svg \"$W/s.svg\" && has out 'substrate picture saved' && has s.svg '4 layer(s), input on the left' && has s.svg '</svg>'"
      leo_seed_bad_value_exits_2
      "sed 's/^leo_seed .*/leo_seed = global/' '${retina}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task retina && has err '[Substrate] leo_seed: bad value' && has err 'b.ini'"
      leo_seed_needs_leo_exits_2
      "sed -e 's/^leo .*/leo = false/' -e 's/^num_outputs .*/num_outputs = 2/' '${retina}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task retina && has err '[Substrate] leo_seed: seeds the LEO output, which needs leo = true'"
      retina_out_runs
      "expect 1 '${otc}' evolve '${retina}' --task retina --seed 1 --generations 3 --out \"$W/r.otm\" && has out 'retina: not solved' && has out 'retina: champion patterns right (of 256) = ' && printf '0,1,1,0,0,1,1,0\\n' > \"$W/x.csv\" && expect 0 '${otc}' run \"$W/r.otm\" --input \"$W/x.csv\" --no-header"
      retina_sides_runs
      "expect 1 '${otc}' evolve '${retina_sides}' --task retina:sides --seed 1 --generations 2 --threads 1 && has out 'retina:sides: not solved' && sed -e 's/^num_inputs .*/num_inputs = 6/' -e '$a layer_input = true' '${retina_sides}' > \"$W/z.ini\" && expect 1 '${otc}' evolve \"$W/z.ini\" --task retina:sides --seed 1 --generations 2 --threads 1 && has out 'retina:sides: not solved' && expect 2 '${otc}' evolve '${retina}' --task retina:sides && has err '[Substrate] output_grid: task retina:sides needs 2x1 (left object, right object)'"
      retina_grid_exits_2
      "expect 2 '${otc}' evolve '${visual}' --task retina && has err '[Substrate] input_grid: task retina needs 4x2'"
      retina_cct_runs
      "expect 1 '${otc}' evolve '${retina_cct}' --task retina --seed 1 --generations 2 --threads 1 && has out 'retina: not solved' && sed 's/^objectives .*/objectives = fitness, substrate_size/' '${retina_cct}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task retina && has err 'b.ini' && has err '[NEAT] objectives: unknown objective' && sed '/^\\[Substrate\\]/,$d' '${retina_cct}' > \"$W/n.ini\" && expect 2 '${otc}' evolve \"$W/n.ini\" --task xor && has err '[NEAT] objectives: substrate_length needs a [Substrate] section' && sed '/^\\[NEAT\\]/a objectives = fitness, diversity' '${visual}' > \"$W/d.ini\" && expect 2 '${otc}' evolve \"$W/d.ini\" --task visual && has err '[NEAT] objectives: diversity needs a behaviour'"
      other_grid_exits_2
      "sed 's/^output_grid .*/output_grid = 5x5/' '${visual}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task visual && has err '[Substrate] output_grid: task visual needs 11x11'"
      baldwin_out_runs
      "sed 's/^pop_size .*/pop_size = 20/' '${retina_baldwin}' > \"$W/r.ini\" && expect 1 '${otc}' evolve \"$W/r.ini\" --task retina --seed 1 --generations 2 --threads 2 --out \"$W/r.otm\" --substrate-svg \"$W/s.svg\" && has out 'retina: champion patterns right (of 256) = ' && has out 'champion saved' && has s.svg '</svg>' && printf '0,1,1,0,0,1,1,0\\n' > \"$W/x.csv\" && expect 0 '${otc}' run \"$W/r.otm\" --input \"$W/x.csv\" --no-header"
      baldwin_lamarckian_exits_2
      "sed 's/^inheritance .*/inheritance = lamarckian/' '${retina_baldwin}' > \"$W/b.ini\" && expect 2 '${otc}' evolve \"$W/b.ini\" --task retina && has err 'b.ini: [Hybrid] inheritance: lamarckian' && has err 'set inheritance = baldwinian' && sed '/^inheritance /d' '${retina_baldwin}' > \"$W/d.ini\" && expect 2 '${otc}' evolve \"$W/d.ini\" --task retina && has err '[Hybrid] inheritance: lamarckian (the default)'"
      baldwin_es_runs
      "sed 's/^pop_size .*/pop_size = 10/' '${visual_es}' > \"$W/e.ini\" && printf '[Hybrid]\\ntrain_steps = 0\\ninheritance = baldwinian\\n' > \"$W/h0\" && sed 's/= 0/= 20/' \"$W/h0\" > \"$W/h20\" && cat \"$W/e.ini\" \"$W/h0\" > \"$W/e0.ini\" && cat \"$W/e.ini\" \"$W/h20\" > \"$W/e20.ini\" && expect 1 '${otc}' evolve \"$W/e0.ini\" --task visual --seed 3 --generations 2 --threads 2 && head -1 \"$W/out\" > \"$W/untrained\" && expect 1 '${otc}' evolve \"$W/e20.ini\" --task visual --seed 3 --generations 2 --threads 2 --out \"$W/e.otm\" && has out 'champion saved' && head -1 \"$W/out\" > \"$W/trained\" && ! cmp -s \"$W/untrained\" \"$W/trained\" && yes 0 | head -n 121 | paste -sd, > \"$W/x.csv\" && expect 0 '${otc}' run \"$W/e.otm\" --input \"$W/x.csv\" --no-header"
      baldwin_optimizer_exits_2
      "sed 's/^optimizer .*/optimizer = sgd/' '${retina_baldwin}' > \"$W/o.ini\" && expect 2 '${otc}' evolve \"$W/o.ini\" --task retina && has err 'o.ini' && has err '[Hybrid] optimizer'"
      baldwin_visual_runs
      "sed 's/^pop_size .*/pop_size = 10/' '${visual}' > \"$W/v.ini\" && printf '[Hybrid]\\ntrain_steps = 5\\ninheritance = baldwinian\\n' >> \"$W/v.ini\" && expect 1 '${otc}' evolve \"$W/v.ini\" --task visual --seed 1 --generations 1 --threads 2 --out \"$W/v.otm\" --reevaluate visual:33 && has out 'visual: champion mean distance d (cells) = ' && has out 'champion saved' && has out 'visual:33: champion fitness' && expect 0 '${otc}' summary \"$W/v.otm\" && has out 'layer1.weight'")
  list(LENGTH hyperneat_cli_cases n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET hyperneat_cli_cases ${i} name)
    list(GET hyperneat_cli_cases ${j} body)
    add_test(NAME hyperneat_cli_${name} COMMAND ${OTC_HYPERNEAT_CLI_BASH} -c "${prelude}${body}")
    set_tests_properties(hyperneat_cli_${name} PROPERTIES TIMEOUT 60)
  endforeach()
endif()
