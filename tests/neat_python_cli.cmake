# neat-python's example configs (the tests' own copies) through `otc evolve` unchanged: each
# runs a few seeded generations on the task that matches it, the CTRNN one with --ctrnn (its
# champion saved, run and compiled to C, its checkpoint resumed), and the ones otc cannot run
# get exit 2 naming why. Each case is one ctest test named neat_python_cli_*.
find_program(OTC_NP_CLI_BASH bash)
if(TARGET otc_cli AND OTC_NP_CLI_BASH)
  set(otc ${PROJECT_BINARY_DIR}/otc)
  set(cfg ${PROJECT_SOURCE_DIR}/tests/neat_python/configs)
  set(work ${CMAKE_CURRENT_BINARY_DIR}/neat_python_cli)
  set(prelude "set -u; W=$(mktemp -d '${work}.XXXXXX') || exit 1; trap 'rm -rf \"$W\"' EXIT; \
expect() { want=$1; shift; \"$@\" >\"$W/out\" 2>\"$W/err\"; got=$?; if [ $got != $want ]; then \
echo \"exit $got, wanted $want: $*\"; cat \"$W/out\" \"$W/err\"; exit 1; fi; }; \
has() { grep -qF -- \"$2\" \"$W/$1\" || { echo \"$1 lacks '$2'\"; cat \"$W/out\" \"$W/err\"; exit 1; }; }; ")
  set(run "--seed 1 --generations 3 --threads 1")
  set(np_cli_cases
      xor_feedforward_runs
      "expect 1 '${otc}' evolve '${cfg}/xor_config-feedforward' --task xor:neat-python ${run} && has out 'xor:neat-python: not solved after 3 generation(s), 450 evaluations'"
      xor_partial_runs
      "expect 1 '${otc}' evolve '${cfg}/xor_config-feedforward-partial' --task xor:neat-python ${run} && has out 'after 3 generation(s), 450 evaluations'"
      single_pole_feedforward_runs
      "expect 0 '${otc}' evolve '${cfg}/single-pole-balancing_config-feedforward' --task pole1:neat-python ${run} && has out 'pole1:neat-python: solved after'"
      single_pole_ctrnn_runs_compiles_resumes
      "expect 1 '${otc}' evolve '${cfg}/single-pole-balancing_config-ctrnn' --task pole1:neat-python --ctrnn ${run} --checkpoint-every 3 --checkpoint-prefix \"$W/ck-\" --out \"$W/c.otm\" && has out 'after 3 generation(s), 750 evaluations' && grep -q time_constant \"$W/ck-3.json\" && expect 0 '${otc}' summary \"$W/c.otm\" && has out 'delay' && printf '0.5,0.5,0.5,0.5\\n0.6,0.4,0.5,0.7\\n' > \"$W/in.csv\" && expect 0 '${otc}' run \"$W/c.otm\" -i \"$W/in.csv\" --no-header && expect 0 '${otc}' compile \"$W/c.otm\" --emit-c \"$W/c\" && has out 'recurrent' && expect 1 '${otc}' evolve '${cfg}/single-pole-balancing_config-ctrnn' --task pole1:neat-python --ctrnn --generations 4 --threads 1 --resume \"$W/ck-3.json\" && has out 'after 4 generation(s)' && expect 2 '${otc}' evolve '${cfg}/single-pole-balancing_config-ctrnn' --task pole1:neat-python --generations 4 --threads 1 --resume \"$W/ck-3.json\" && has err 'ctrnn'"
      ctrnn_xor_needs_times
      "expect 2 '${otc}' evolve '${cfg}/xor_config-feedforward' --task xor:neat-python --ctrnn && has err 'task xor:neat-python has no time per action' && expect 1 '${otc}' evolve '${cfg}/xor_config-feedforward' --task xor:neat-python --ctrnn --advance-time 1 --time-step 0.25 ${run} && has out 'after 3 generation(s)' && expect 2 '${otc}' evolve '${cfg}/xor_config-feedforward' --task xor:neat-python --advance-time 1 --time-step 0.25 && has err 'are for --ctrnn' && expect 2 '${otc}' evolve '${cfg}/xor_config-feedforward' --task xor:neat-python --ctrnn --advance-time 1 --time-step 0.000001 && has err 'integration steps'"
      single_pole_as_pole1_names_the_variant
      "expect 2 '${otc}' evolve '${cfg}/single-pole-balancing_config-feedforward' --task pole1 && has err 'task pole1 has 5 inputs, the config says 4' && has err '--task pole1:neat-python'"
      lunar_lander_exits_2
      "expect 2 '${otc}' evolve '${cfg}/lunar-lander_config-feedforward' --task lunar-lander && has err \"unknown task 'lunar-lander'\" && has err 'exec:PROGRAM'"
      # neat-python's XOR config evolves under neat-python's rules: neat-python 2.1 solves it
      # in 68 generations on average (20/20 seeds), otc in 78 (40/40; seeds 1-10: at most 120)
      xor_solves_like_neat_python
      "n=0 && for s in 1 2 3 4 5 6 7 8 9 10
do '${otc}' evolve '${cfg}/xor_config-feedforward' --task xor:neat-python --seed $s --generations 150 --threads 1 >>\"$W/out\" 2>&1 && n=$((n + 1))
done
[ $n -ge 8 ] || (echo \"only $n of 10 seeds solved within 150 generations\" && cat \"$W/out\" && exit 1)"
      evolution_key_checked
      "printf '[NEAT]\\nevolution = neat\\n' >\"$W/e.ini\" && expect 2 '${otc}' evolve \"$W/e.ini\" --task xor:neat-python && has err \"e.ini:2: [NEAT] evolution: bad value 'neat' (expected neat-python or otc)\""
      memory_fixed_custom_activation_exits_2
      "expect 2 '${otc}' evolve '${cfg}/memory-fixed_config' --task xor && has err \"memory-fixed_config:21: [DefaultGenome] activation_default: unsupported activation 'my_sinc_function'\" && has err 'custom function'")
  list(LENGTH np_cli_cases n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET np_cli_cases ${i} name)
    list(GET np_cli_cases ${j} body)
    add_test(NAME neat_python_cli_${name} COMMAND ${OTC_NP_CLI_BASH} -c "${prelude}${body}")
    set_tests_properties(neat_python_cli_${name} PROPERTIES TIMEOUT 120)
  endforeach()
endif()
