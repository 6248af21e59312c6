# Hostile input files and command lines end to end (tests/cli/hostile_tests.sh, issue 29
# round 3): each case a ctest test; the models come from test_cli.cmake's cli_make_models.
find_program(OTC_HOSTILE_BASH bash)
if(TARGET otc_cli AND OTC_HOSTILE_BASH)
  foreach(case escaped_names json_strict json_memory bptt stdout_lost
               viz_size idx bench_no_jit)
    add_test(NAME cli_hostile_${case}
             COMMAND ${OTC_HOSTILE_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/hostile_tests.sh
                     $<TARGET_FILE:otc_cli> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/cli_models
                     ${case})
    set_tests_properties(cli_hostile_${case} PROPERTIES FIXTURES_REQUIRED otc_cli_models TIMEOUT 120
                                                        SKIP_RETURN_CODE 77)
  endforeach()
endif()
