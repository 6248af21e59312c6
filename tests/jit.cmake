# The LLVM JIT tests share tests/jit_support.c and use the random-graph generator
# (tests/testgen.cmake defines otc_testgen; it is read after this file, and a target named
# before it exists is resolved at the end).
foreach(t test_jit test_jit_api)
  if(TARGET ${t})
    target_sources(${t} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/jit_support.c)
    target_link_libraries(${t} PRIVATE otc_testgen)
  endif()
endforeach()
# The command-line side: otc compile --emit-llvm/-asm/-obj, otc bench, otc evolve --jit.
find_program(OTC_JIT_BASH bash)
if(TARGET otc_cli AND OTC_JIT_BASH AND TARGET otc_compiler AND OTC_LLVM_LIB)
  add_test(NAME jit_cli
           COMMAND ${OTC_JIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/jit_cli.sh $<TARGET_FILE:otc_cli>
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/cli_models)
  set_tests_properties(jit_cli PROPERTIES FIXTURES_REQUIRED otc_cli_models TIMEOUT 300)
  # The on-disk object cache: warm runs, damaged entries, concurrent writers, eviction.
  add_test(NAME jit_cache
           COMMAND ${OTC_JIT_BASH} ${CMAKE_CURRENT_LIST_DIR}/jit_cache.sh $<TARGET_FILE:otc_cli>
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/cli_models)
  set_tests_properties(jit_cache PROPERTIES FIXTURES_REQUIRED otc_cli_models TIMEOUT 120)
endif()
# The JIT's training through time over a tape (tests/test_jit_tape.c).
if(TARGET test_jit_tape)
  target_sources(test_jit_tape PRIVATE ${CMAKE_CURRENT_LIST_DIR}/bptt_support.c)
endif()
