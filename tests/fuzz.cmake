# libFuzzer targets for the .otm loader (fuzz_model.c), the CSV reader (fuzz_csv.c), the NEAT
# config reader (fuzz_neat_config.c), NEAT checkpoints (fuzz_neat_checkpoint.c), the ONNX
# importer (fuzz_onnx.c), the exec: task's protocol reader (fuzz_exec_protocol.c) and
# neat-python network import (fuzz_neat_python.c), built
# with clang-19 as a separate project (tests/fuzz/) and run for a bounded time as ctest tests.
# Without clang-19, or with -DOTC_FUZZ=OFF, nothing here is built or registered.
if(NOT OTC_FUZZ)
  return()
endif()
find_program(OTC_CLANG19 NAMES clang-19)
if(NOT OTC_CLANG19)
  message(STATUS "clang-19 not found: fuzz tests are not built")
  return()
endif()

include(ExternalProject)
set(fuzz_dir ${PROJECT_BINARY_DIR}/fuzz)
ExternalProject_Add(otc_fuzzers
  SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz
  BINARY_DIR ${fuzz_dir}
  CMAKE_ARGS -DCMAKE_C_COMPILER=${OTC_CLANG19} -DOTC_ROOT=${PROJECT_SOURCE_DIR}
             -DOTC_GENERATED_INCLUDE=${PROJECT_BINARY_DIR}/include
             -DCMAKE_BUILD_TYPE=RelWithDebInfo
  BUILD_ALWAYS ON
  INSTALL_COMMAND ""
  BUILD_BYPRODUCTS ${fuzz_dir}/fuzz_csv ${fuzz_dir}/fuzz_model ${fuzz_dir}/fuzz_neat_config
                   ${fuzz_dir}/fuzz_neat_checkpoint ${fuzz_dir}/fuzz_onnx
                   ${fuzz_dir}/fuzz_exec_protocol ${fuzz_dir}/fuzz_neat_python)

# Seed corpora, written at configure time; libFuzzer adds what it finds to the first
# directory it is given, so these grow from run to run within the build directory.
set(OTC_FUZZ_SECONDS 20 CACHE STRING "Seconds each fuzz test runs")
set(csv_corpus ${fuzz_dir}/csv_corpus)
file(MAKE_DIRECTORY ${csv_corpus})
set(iris_head "sepal_length,sepal_width,petal_length,petal_width,species\n5.1,3.5,1.4,0.2,0")
if(EXISTS ${PROJECT_SOURCE_DIR}/examples/data/iris.csv)
  file(STRINGS ${PROJECT_SOURCE_DIR}/examples/data/iris.csv iris_lines LIMIT_COUNT 12)
  list(JOIN iris_lines "\n" iris_head)
endif()
# The first byte picks the options: bit 0 header, bits 1-2 delimiter (, ; tab |), bits 3-5
# targets, bits 6-7 features (lists in fuzz_csv.c); printable choices keep CMake happy.
file(WRITE ${csv_corpus}/iris_species "Y${iris_head}\n")           # header, species, 0,1
file(WRITE ${csv_corpus}/iris_features "A${iris_head}\n")          # header, features 0,1
file(WRITE ${csv_corpus}/plain " 1,2,3\n4,5,6\n7,8,9\n")          # no header, target c0
file(WRITE ${csv_corpus}/semicolon_crlf "+a;b;c\r\n1;2;3\r\n4.5;-6e3;7\r\n") # ';', 0,0
file(WRITE ${csv_corpus}/quoted_labels "1\"x\",\"y\",\"label\"\n1,2,\"cat\"\n3,4,dog\n5,6,cat\n")
file(WRITE ${csv_corpus}/tabs "$1\t2\n3\t4\n")                    # tab, no header, c0
file(WRITE ${csv_corpus}/odd_numbers " 1e308,-0,0x10\n.5,5.,+3\n1e-320,inf,nan\n")

set(model_corpus ${fuzz_dir}/model_corpus)
file(MAKE_DIRECTORY ${model_corpus})

set(common -max_total_time=${OTC_FUZZ_SECONDS} -timeout=10 -rss_limit_mb=2048 -seed=1
           -print_final_stats=1)
add_test(NAME fuzz_csv_bounded COMMAND ${fuzz_dir}/fuzz_csv ${common} -max_len=4096
                                       ${csv_corpus})
set_tests_properties(fuzz_csv_bounded PROPERTIES TIMEOUT 300)
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_model.c)
  # Seeds: the models the CLI tests make (test_cli.cmake's fixture); a second corpus
  # directory is only read. Made here too, so the run works when that fixture is absent.
  set(cli_models ${PROJECT_BINARY_DIR}/cli_models)
  file(MAKE_DIRECTORY ${cli_models})
  add_test(NAME fuzz_model_bounded
           COMMAND ${fuzz_dir}/fuzz_model ${common} -max_len=65536 ${model_corpus} ${cli_models})
  set_tests_properties(fuzz_model_bounded PROPERTIES FIXTURES_REQUIRED otc_cli_models
                                                     TIMEOUT 300)
endif()

# NEAT configs: seeds are the example configs (read only, as a second corpus directory).
set(neat_config_corpus ${fuzz_dir}/neat_config_corpus)
file(MAKE_DIRECTORY ${neat_config_corpus})
add_test(NAME fuzz_neat_config_bounded
         COMMAND ${fuzz_dir}/fuzz_neat_config ${common} -max_len=8192 ${neat_config_corpus}
                 ${PROJECT_SOURCE_DIR}/examples/neat)
set_tests_properties(fuzz_neat_config_bounded PROPERTIES TIMEOUT 300)

# NEAT checkpoints: seeds are checkpoints of a short run with the config the target resumes
# with, made by the otc binary (a fixture, as the model corpus).
set(neat_ck_corpus ${fuzz_dir}/neat_checkpoint_corpus)
set(neat_ck_seeds ${fuzz_dir}/neat_checkpoint_seeds)
file(MAKE_DIRECTORY ${neat_ck_corpus} ${neat_ck_seeds})
add_test(NAME fuzz_neat_checkpoint_seeds
         COMMAND sh -c "'${PROJECT_BINARY_DIR}/otc' evolve '${CMAKE_CURRENT_SOURCE_DIR}/fuzz/neat_fuzz.ini' --task xor --seed 3 --generations 4 --threads 1 --checkpoint-every 1 --checkpoint-prefix '${neat_ck_seeds}/ck-' >/dev/null; test -s '${neat_ck_seeds}/ck-1.json'")
set_tests_properties(fuzz_neat_checkpoint_seeds PROPERTIES FIXTURES_SETUP otc_neat_ck_seeds)
add_test(NAME fuzz_neat_checkpoint_bounded
         COMMAND ${fuzz_dir}/fuzz_neat_checkpoint ${common} -max_len=65536 ${neat_ck_corpus}
                 ${neat_ck_seeds})
set_tests_properties(fuzz_neat_checkpoint_bounded PROPERTIES FIXTURES_REQUIRED otc_neat_ck_seeds
                                                             TIMEOUT 300)

# ONNX models: seeds are the PyTorch fixtures and three of otc's own exports (every
# activation's nodes, NEAT neurons of a CTRNN, a neuron loop's state pairs: what the importer
# matches back, onnx_match.c) (tests/onnx/*.onnx, read only).
set(onnx_corpus ${fuzz_dir}/onnx_corpus)
file(MAKE_DIRECTORY ${onnx_corpus})
add_test(NAME fuzz_onnx_bounded
         COMMAND ${fuzz_dir}/fuzz_onnx ${common} -max_len=65536 ${onnx_corpus}
                 ${PROJECT_SOURCE_DIR}/tests/onnx)
set_tests_properties(fuzz_onnx_bounded PROPERTIES TIMEOUT 300)
# The exec: protocol reader: seeds are lines an environment says (the first byte picks
# num_inputs: '"' is 34, 34 % 8 + 1 = 3 inputs).
set(exec_corpus ${fuzz_dir}/exec_protocol_corpus)
file(MAKE_DIRECTORY ${exec_corpus})
file(WRITE ${exec_corpus}/episode "\"obs 0 1 2\nstep 1 0 0.5 -1e3 7\nstep -2.5 1\n")
file(WRITE ${exec_corpus}/last_obs "\"obs 1 1 1\nstep 0 1 1 2 3\nstep 1e308 0 nan inf 1\n")
file(WRITE ${exec_corpus}/garbage "\"obs\t1\r\nstep  0x10 0 1 2 3\nact 1\n\n")
add_test(NAME fuzz_exec_protocol_bounded
         COMMAND ${fuzz_dir}/fuzz_exec_protocol ${common} -max_len=4096 ${exec_corpus})
set_tests_properties(fuzz_exec_protocol_bounded PROPERTIES TIMEOUT 300)
# neat-python networks: seeds are the fixtures (tests/neat_python/*.json), each with an options
# byte in front (fuzz_neat_python.c), written at configure time.
set(neat_python_corpus ${fuzz_dir}/neat_python_corpus)
set(neat_python_seeds ${fuzz_dir}/neat_python_seeds)
file(MAKE_DIRECTORY ${neat_python_corpus} ${neat_python_seeds})
file(GLOB neat_python_fixtures ${PROJECT_SOURCE_DIR}/tests/neat_python/*_000.json)
foreach(f ${neat_python_fixtures})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} body)
  file(WRITE ${neat_python_seeds}/${name} "A${body}") # 'A': bits 0 and 6, the file's own times
endforeach()
add_test(NAME fuzz_neat_python_bounded
         COMMAND ${fuzz_dir}/fuzz_neat_python ${common} -max_len=16384 ${neat_python_corpus}
                 ${neat_python_seeds})
set_tests_properties(fuzz_neat_python_bounded PROPERTIES TIMEOUT 300)
