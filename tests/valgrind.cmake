# The CLI under valgrind: every subcommand, on success and on bad input, must run without
# memory errors or leaks. Skipped under the sanitizer build (the two do not mix).
find_program(OTC_VALGRIND valgrind)
if(NOT OTC_VALGRIND OR OTC_SANITIZE OR NOT TARGET otc_cli)
  return()
endif()
set(ex ${PROJECT_SOURCE_DIR}/examples)
set(vg_cases
  "summary|summary ${ex}/models/iris_mlp.otm"
  "summary_bad|summary ${ex}/data/iris.csv"
  "train|train ${ex}/models/iris_mlp.otm --data ${ex}/data/iris.csv --target species --epochs 2 --out @OUT@/t.otm --plot @OUT@/p.svg"
  "run|run ${ex}/models/iris_mlp.otm --input ${ex}/data/iris.csv --drop species --argmax -o @OUT@/o.csv"
  "viz|viz ${ex}/models/iris_mlp.otm -o @OUT@/v.svg --weights --group-depth"
  "evolve|evolve ${ex}/neat/xor.ini --task xor --seed 1 --generations 3 --threads 2 --out @OUT@/x.otm --plot @OUT@/f.svg --stats @OUT@/s.csv"
  "evolve_bad|evolve ${ex}/data/iris.csv --task xor --out @OUT@/x.otm")
if(EXISTS ${PROJECT_SOURCE_DIR}/frontend/cmd_compile.c)
  list(APPEND vg_cases "compile|compile ${ex}/models/iris_mlp.otm --emit-c @OUT@/c --name iris")
endif()
foreach(entry ${vg_cases})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 name)
  list(GET parts 1 cmdline)
  separate_arguments(cmd UNIX_COMMAND "${cmdline}")
  add_test(NAME valgrind_cli_${name}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/valgrind_cli.sh $<TARGET_FILE:otc_cli>
                   ${PROJECT_SOURCE_DIR} ${cmd})
  set_tests_properties(valgrind_cli_${name} PROPERTIES TIMEOUT 600)
endforeach()
