# otc_testgen: the random-graph generator (evolved-style DAGs, MLPs) the compiler's
# differential tests (C and LLVM) and the benchmarks use. It lives in libotc
# (runtime/src/layers/random_graph.c, otc/random_graph.h), so `otc bench --random` links nothing
# from tests/; this name stays for the tests that ask for it (plus dlopen for emitted code).
add_library(otc_testgen INTERFACE)
target_link_libraries(otc_testgen INTERFACE otc ${CMAKE_DL_LIBS})
foreach(t test_plan test_render_c)
  if(TARGET ${t})
    target_link_libraries(${t} PRIVATE otc_testgen)
  endif()
endforeach()
# bench/ is configured after tests/: link its programs once the whole tree is read.
function(otc_testgen_link_bench)
  if(TARGET bench_emit_c)
    target_link_libraries(bench_emit_c PRIVATE otc_testgen)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL otc_testgen_link_bench)
