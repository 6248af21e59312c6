# The emitted-C tests share tests/emitc_support.c (build many generated models in one
# compiler run, load them with dlopen, compare with the interpreter).
foreach(t test_plan test_render_c test_render_c_train test_recurrent_compiled test_bptt_tape)
  if(TARGET ${t})
    target_sources(${t} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/emitc_support.c)
    target_link_libraries(${t} PRIVATE otc_testgen ${CMAKE_DL_LIBS})
  endif()
endforeach()
# Compiled recurrence also compares the JIT when the LLVM backend is built.
if(TARGET test_recurrent_compiled AND TARGET otc_compiler AND OTC_LLVM_LIB)
  target_compile_definitions(test_recurrent_compiled PRIVATE OTC_TEST_JIT=1)
endif()
# The cross-compiling tests exit 77 when the Arm toolchain is not installed.
foreach(t emitc_cross_aarch64_qemu emitc_cross_armhf conv_emitc_aarch64_qemu)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endforeach()

# `otc compile` end to end (tests/emitc_cli.sh).
if(TARGET otc_cli)
  add_test(NAME emitc_cli_compile
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/emitc_cli.sh $<TARGET_FILE:otc_cli>
                   ${PROJECT_SOURCE_DIR}/examples/models/iris_mlp.otm)
  set_tests_properties(emitc_cli_compile PROPERTIES TIMEOUT 120)
endif()
# The evolved pole balancer shipped as C (examples/deploy/pole_balancer.c, tests/deploy_pole.sh).
if(TARGET otc_cli)
  add_test(NAME deploy_pole_balancer
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/deploy_pole.sh $<TARGET_FILE:otc_cli>
                   ${PROJECT_SOURCE_DIR})
  set_tests_properties(deploy_pole_balancer PROPERTIES TIMEOUT 300)
endif()
# Compiled training through time: interpreter, JIT and the emitted C of unrolled graphs.
if(TARGET test_bptt_compiled)
  target_sources(test_bptt_compiled PRIVATE ${CMAKE_CURRENT_LIST_DIR}/emitc_executor.c
                                            ${CMAKE_CURRENT_LIST_DIR}/emitc_support.c
                                            ${CMAKE_CURRENT_LIST_DIR}/bptt_support.c)
  target_link_libraries(test_bptt_compiled PRIVATE otc_testgen ${CMAKE_DL_LIBS})
  if(TARGET otc_compiler AND OTC_LLVM_LIB)
    target_compile_definitions(test_bptt_compiled PRIVATE OTC_TEST_JIT=1)
  endif()
endif()
# Each builds its emitted C with the system compiler, case by case: slow on a loaded machine.
foreach(t bptt_compiled_random_graphs bptt_compiled_layers)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES TIMEOUT 900)
  endif()
endforeach()
# Training through time over an emitted tape (tests/test_bptt_tape.c).
if(TARGET test_bptt_tape)
  target_sources(test_bptt_tape PRIVATE ${CMAKE_CURRENT_LIST_DIR}/bptt_support.c)
endif()
