# Every program the build, tests, demo and benchmarks run comes from a package that
# scripts/install-deps.sh installs (tests/external_programs.sh); and the check does catch one
# that is not: with graphviz left out of the table, test_plan.c's `dot` must be reported. The
# second check reuses the first one's scan of the sources (a fixture: the scan is most of the
# time). Neither runs otc's code, so the sanitizer tree skips them (the Release tree checks).
set(check ${CMAKE_CURRENT_LIST_DIR}/external_programs.sh)
set(scan ${CMAKE_CURRENT_BINARY_DIR}/external_programs_scan.txt)
if(OTC_SANITIZE)
  foreach(t external_programs_installed external_programs_catches_unlisted)
    add_test(NAME ${t} COMMAND sh -c "echo 'skipped: OTC_SANITIZE build (no otc code)'; exit 77")
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
else()
  add_test(NAME external_programs_installed
           COMMAND bash ${check} --scan-out ${scan} ${PROJECT_SOURCE_DIR})
  add_test(NAME external_programs_catches_unlisted
           COMMAND bash -c "t=$(mktemp -d) && trap 'rm -rf \"$t\"' EXIT && \
bash '${PROJECT_SOURCE_DIR}/scripts/install-deps.sh' --list --bench | grep -v '^graphviz ' \
> \"$t/table\" && { bash '${check}' --scan-in '${scan}' '${PROJECT_SOURCE_DIR}' \"$t/table\" \
> \"$t/out\"; test $? = 1; } && grep -E 'tests/[a-z_]+\\.c runs dot ' \"$t/out\"")
  # ~44 s at a load of 4 (a pipeline of processes per source file scanned, then dpkg-query):
  # 120 s ran out twice at a load of 12-13, so the limit is for a machine far busier than CI.
  set_tests_properties(external_programs_installed PROPERTIES TIMEOUT 300
                       FIXTURES_SETUP external_programs_scan)
  set_tests_properties(external_programs_catches_unlisted PROPERTIES TIMEOUT 300
                       FIXTURES_REQUIRED external_programs_scan)
endif()
