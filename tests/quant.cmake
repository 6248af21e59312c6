# int8 quantisation: test_quant builds the emitted C with the system compiler and dlopen()s
# it; tests/quant_int8.sh takes it to Cortex-M0/M4 objects (no soft float) and armhf under
# qemu (exit 77 without the Arm toolchains).
if(TARGET test_quant)
  target_link_libraries(test_quant PRIVATE ${CMAKE_DL_LIBS})
endif()
if(TARGET otc_cli)
  add_test(NAME quant_int8_cli
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/quant_int8.sh $<TARGET_FILE:otc_cli>
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/cli_models)
  # The recurrent and two-input models come from tests/cli/make_test_models.c.
  set_tests_properties(quant_int8_cli PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
                                                 FIXTURES_REQUIRED otc_cli_models)
endif()
