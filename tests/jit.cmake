# The LLVM JIT tests use the random-graph generator (tests/testgen.cmake defines otc_testgen;
# it is read after this file, and a target named before it exists is resolved at the end).
if(TARGET test_jit AND EXISTS ${CMAKE_CURRENT_LIST_DIR}/random_graph.c)
  target_link_libraries(test_jit PRIVATE otc_testgen)
endif()
