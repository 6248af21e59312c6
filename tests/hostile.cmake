# test_hostile_names builds and loads emitted C through tests/emitc_support.c, checks the
# LLVM IR and header when the LLVM backend is built, and drives the `otc` binary.
if(TARGET test_hostile_names)
  target_sources(test_hostile_names PRIVATE ${CMAKE_CURRENT_LIST_DIR}/emitc_support.c)
  target_link_libraries(test_hostile_names PRIVATE otc_testgen ${CMAKE_DL_LIBS})
  if(TARGET otc_compiler AND OTC_LLVM_LIB)
    target_compile_definitions(test_hostile_names PRIVATE OTC_TEST_LLVM=1)
  endif()
  if(TARGET otc_cli)
    target_compile_definitions(test_hostile_names PRIVATE OTC_CLI="$<TARGET_FILE:otc_cli>")
    add_dependencies(test_hostile_names otc_cli)
  endif()
endif()
