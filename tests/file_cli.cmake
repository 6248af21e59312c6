# Where the `otc` command's files go (tests/cli/file_tests.sh): devices, FIFOs and symbolic
# links as outputs, outputs naming an input, endless inputs, emit-c's pair, stale temporaries.
find_program(OTC_FILES_BASH bash)
if(TARGET otc_cli AND OTC_FILES_BASH)
  foreach(case output_device output_symlink output_over_input derived_outputs unbounded_input
               emit_c_pair stale_temporaries long_error)
    add_test(NAME cli_files_${case}
             COMMAND ${OTC_FILES_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/file_tests.sh
                     $<TARGET_FILE:otc_cli> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/cli_models
                     ${case})
    # the models come from test_cli.cmake's cli_make_models
    set_tests_properties(cli_files_${case} PROPERTIES FIXTURES_REQUIRED otc_cli_models TIMEOUT 300)
  endforeach()
endif()
