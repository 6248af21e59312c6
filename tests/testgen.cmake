# otc_testgen: the random-graph generator (evolved-style DAGs, MLPs) shared by the compiler's
# differential tests (C and LLVM) and the benchmarks.
add_library(otc_testgen STATIC ${CMAKE_CURRENT_LIST_DIR}/random_graph.c)
target_include_directories(otc_testgen PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(otc_testgen PUBLIC otc)
foreach(t test_plan test_render_c)
  if(TARGET ${t})
    target_link_libraries(${t} PRIVATE otc_testgen ${CMAKE_DL_LIBS})
  endif()
endforeach()
# bench/ is configured after tests/: link its programs once the whole tree is read.
function(otc_testgen_link_bench)
  if(TARGET bench_emit_c)
    target_link_libraries(bench_emit_c PRIVATE otc_testgen ${CMAKE_DL_LIBS})
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL otc_testgen_link_bench)
