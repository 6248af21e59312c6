# Every C file follows the repo's .clang-format (checked, never rewritten, by the test).
find_program(OTC_CLANG_FORMAT NAMES clang-format)
if(NOT OTC_CLANG_FORMAT)
  return()
endif()
add_test(NAME format_clang_format
         COMMAND bash -c "cd '${PROJECT_SOURCE_DIR}' && files=$(find runtime compiler frontend tests examples bench -name '*.[ch]') && '${OTC_CLANG_FORMAT}' --dry-run -Werror $files")
