# The exec: task's child processes, driven through otc (tests/cli/exec_processes.sh).
find_program(OTC_EXEC_BASH bash)
if(TARGET otc_cli AND OTC_EXEC_BASH)
  foreach(case normal_end sigterm sigint max_steps startup threads)
    add_test(NAME exec_processes_${case}
             COMMAND ${OTC_EXEC_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/exec_processes.sh
                     $<TARGET_FILE:otc_cli> ${PROJECT_SOURCE_DIR} ${case})
    set_tests_properties(exec_processes_${case} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  endforeach()
endif()
