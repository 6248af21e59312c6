# The installed tree as users get it (tests/install_test.sh), otc as a subdirectory of another
# project (tests/install/subproject_test.sh) and the man page generated from
# --help (tests/man_page_test.sh).
find_program(OTC_INSTALL_BASH bash)
if(TARGET otc_cli AND OTC_INSTALL_BASH)
  set(have_jit 0)
  if(TARGET otc_llvm)
    set(have_jit 1)
  endif()
  # A sanitizer build installs instrumented libraries: the programs using them are built so too.
  set(consumer_flags " ")
  if(OTC_SANITIZE)
    set(consumer_flags "-fsanitize=address,undefined")
  endif()
  add_test(NAME install_tree
           COMMAND ${OTC_INSTALL_BASH} ${CMAKE_CURRENT_LIST_DIR}/install_test.sh ${PROJECT_BINARY_DIR}
                   ${PROJECT_SOURCE_DIR} ${CMAKE_INSTALL_LIBDIR} ${PROJECT_VERSION}
                   ${CMAKE_COMMAND} ${CMAKE_C_COMPILER} ${have_jit} "${consumer_flags}")
  set_tests_properties(install_tree PROPERTIES TIMEOUT 600)
  add_test(NAME man_page
           COMMAND ${OTC_INSTALL_BASH} ${CMAKE_CURRENT_LIST_DIR}/man_page_test.sh
                   $<TARGET_FILE:otc_cli> ${PROJECT_BINARY_DIR}/man/otc.1)
  set_tests_properties(man_page PROPERTIES TIMEOUT 60)
endif()
if(OTC_INSTALL_BASH)
  add_test(NAME subproject_configure
           COMMAND ${OTC_INSTALL_BASH} ${CMAKE_CURRENT_LIST_DIR}/install/subproject_test.sh
                   ${PROJECT_SOURCE_DIR} ${CMAKE_COMMAND} ${CMAKE_CURRENT_BINARY_DIR}/subproject)
  set_tests_properties(subproject_configure PROPERTIES TIMEOUT 300)
endif()
# libotc.so exports its public API only (runtime/libotc.map): no onnx__* of the generated
# protobuf code, no private helper.
if(TARGET otc_shared)
  add_test(NAME libotc_exports_only_api
           COMMAND sh -c "command -v nm > /dev/null || exit 77; nm -D --defined-only \"$0\" | \
awk '$3 == \"otc_onnx_import\" { api = 1 } $3 !~ /^otc_/ { print; bad = 1 } END { exit bad || !api }'"
                   $<TARGET_FILE:otc_shared>)
  set_tests_properties(libotc_exports_only_api PROPERTIES SKIP_RETURN_CODE 77)
endif()
