# `otc evolve` exit codes, end to end through the built binary: 0 solved, 1 not solved, 2 bad
# input (unknown task, missing config, unknown key named with its section and line), and --out
# writing a model `otc summary` can read. Each case is one ctest test named neat_cli_*.
find_program(OTC_NEAT_CLI_BASH bash)
if(TARGET otc_cli AND OTC_NEAT_CLI_BASH)
  set(otc ${PROJECT_BINARY_DIR}/otc)
  set(examples ${PROJECT_SOURCE_DIR}/examples/neat)
  set(work ${CMAKE_CURRENT_BINARY_DIR}/neat_cli)
  # expect CODE CMD...: run CMD with output in $W/out and $W/err; fail unless it exits CODE.
  set(prelude "set -u; W=$(mktemp -d '${work}.XXXXXX') || exit 1; trap 'rm -rf \"$W\"' EXIT; \
expect() { want=$1; shift; \"$@\" >\"$W/out\" 2>\"$W/err\"; got=$?; if [ $got != $want ]; then \
echo \"exit $got, wanted $want: $*\"; cat \"$W/out\" \"$W/err\"; exit 1; fi; }; \
has() { grep -qF -- \"$2\" \"$W/$1\" || { echo \"$1 lacks '$2'\"; cat \"$W/out\" \"$W/err\"; exit 1; }; }; ")

  set(neat_cli_cases
      solved_xor_exits_0
      "expect 0 '${otc}' evolve '${examples}/xor.ini' --task xor --seed 1 --threads 1 && has out 'xor: solved'"
      unsolved_exits_1
      "expect 1 '${otc}' evolve '${examples}/dpnv.ini' --task dpnv --seed 1 --generations 1 --threads 1 && has out 'not solved'"
      unknown_task_exits_2
      "expect 2 '${otc}' evolve '${examples}/xor.ini' --task no_such_task && has err 'no_such_task'"
      missing_config_exits_2
      "expect 2 '${otc}' evolve \"$W/missing.ini\" --task xor && has err 'missing.ini'"
      unknown_key_exits_2
      "cp '${examples}/xor.ini' \"$W/bad.ini\" && echo 'bogus_key = 1' >> \"$W/bad.ini\" && n=$(wc -l < \"$W/bad.ini\") && expect 2 '${otc}' evolve \"$W/bad.ini\" --task xor && has err \"bad.ini:$n:\" && has err '[DefaultReproduction]' && has err 'bogus_key: unknown key'"
      out_writes_loadable_model
      "expect 0 '${otc}' evolve '${examples}/xor.ini' --task xor --seed 2 --threads 1 --out \"$W/best.otm\" && test -s \"$W/best.otm\" && expect 0 '${otc}' summary \"$W/best.otm\" && has out 'genome (NEAT)'")
  list(LENGTH neat_cli_cases n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET neat_cli_cases ${i} name)
    list(GET neat_cli_cases ${j} body)
    add_test(NAME neat_cli_${name} COMMAND ${OTC_NEAT_CLI_BASH} -c "${prelude}${body}")
    set_tests_properties(neat_cli_${name} PROPERTIES TIMEOUT 60)
  endforeach()
endif()
