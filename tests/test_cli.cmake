# CLI-level tests: test_dot parses its DOT with libgvc when Graphviz is there, and the `otc`
# command is driven through every exit path by tests/cli/cli_tests.sh, one ctest test per case.
pkg_check_modules(OTC_TEST_GVC QUIET IMPORTED_TARGET libgvc)
if(TARGET test_dot AND OTC_TEST_GVC_FOUND)
  target_link_libraries(test_dot PRIVATE PkgConfig::OTC_TEST_GVC)
  target_compile_definitions(test_dot PRIVATE OTC_HAVE_GVC=1)
  target_sources(test_dot PRIVATE ${PROJECT_SOURCE_DIR}/frontend/cli_lsan_graphviz.c)
endif()

# The shipped example model's generator, and the extra models only the tests use.
add_executable(make_iris_mlp ${PROJECT_SOURCE_DIR}/examples/models/make_iris_mlp.c)
target_link_libraries(make_iris_mlp PRIVATE otc)
add_executable(make_test_models ${CMAKE_CURRENT_SOURCE_DIR}/cli/make_test_models.c)
target_link_libraries(make_test_models PRIVATE otc)

find_program(OTC_BASH bash)
if(TARGET otc_cli AND OTC_BASH)
  set(models ${PROJECT_BINARY_DIR}/cli_models)
  add_test(NAME cli_make_models
           COMMAND ${OTC_BASH} -c "mkdir -p '${models}' && '$<TARGET_FILE:make_iris_mlp>' \
'${models}/iris_mlp.otm' && '$<TARGET_FILE:make_test_models>' '${models}'")
  set_tests_properties(cli_make_models PROPERTIES FIXTURES_SETUP otc_cli_models)
  set(cases help command_help usage_errors summary summary_neat bad_model_files
            bad_csv_files train train_regression train_errors train_model_shapes train_diverges run run_errors
            viz viz_errors outputs_atomic shipped_example recurrent sequence_recorded
            train_standardize recurrent_errors import exec_task images images_errors new new_errors eval
            eval_episodes columns conventions traps empty_list_items option_given_twice
            option_empty_and_nonfinite)
  if(TARGET otc_compiler AND OTC_LLVM_LIB) # as frontend/CMakeLists.txt decides on --jit
    list(APPEND cases jit images_compiled bench_counts bench_bptt)
  endif()
  foreach(case ${cases})
    add_test(NAME cli_${case}
             COMMAND ${OTC_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_tests.sh
                     $<TARGET_FILE:otc_cli> ${PROJECT_SOURCE_DIR} ${models} ${case})
    set_tests_properties(cli_${case} PROPERTIES FIXTURES_REQUIRED otc_cli_models TIMEOUT 300)
  endforeach()
  # The exec protocol's cart-pole example (docs/neat.md), evolved end to end.
  add_test(NAME cli_exec_cartpole
           COMMAND ${OTC_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/exec_cartpole.sh
                   $<TARGET_FILE:otc_cli> ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli_exec_cartpole PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  # docs/library.md's program (examples/library_train.c) saves a model that `otc run` takes.
  add_test(NAME cli_library_train
           COMMAND ${OTC_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/library_train.sh
                   $<TARGET_FILE:example_library_train> $<TARGET_FILE:otc_cli> ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli_library_train PROPERTIES TIMEOUT 300)
  # docs/commands.md names every subcommand, usage line and option --help prints.
  add_test(NAME docs_commands
           COMMAND ${OTC_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/docs_commands.sh
                   $<TARGET_FILE:otc_cli> ${PROJECT_SOURCE_DIR})
endif()
