# `mpirun -n K otc evolve` (tests/mpi_evolve.sh): byte-identical runs for K = 1..4 on xor,
# dpv and a novelty search maze run (behaviours returned), hybrid csv with the trained weights
# returned, resume on another K, a killed and a stopped rank. Open MPI is installed by scripts/install-deps.sh, so these run in CI; a build
# without MPI has no libotc_mpi and no such tests.
find_program(OTC_MPIRUN mpirun)
if(TARGET otc_cli AND TARGET otc_mpi AND OTC_MPIRUN)
  foreach(c xor dpv novelty hybrid resume killed stopped jit)
    add_test(NAME mpi_evolve_${c}
             COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/mpi_evolve.sh ${PROJECT_BINARY_DIR}/otc
                     ${PROJECT_SOURCE_DIR}/examples ${c})
    # Under the sanitizers: Open MPI's own leaks suppressed (tests/lsan_mpi.supp), with full
    # stacks so that its unloaded components' allocations still show the MPI frames.
    set_tests_properties(mpi_evolve_${c} PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE ENVIRONMENT
      "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan_mpi.supp:print_suppressions=0;ASAN_OPTIONS=fast_unwind_on_malloc=0")
  endforeach()
endif()
