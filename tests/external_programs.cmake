# Every program the build, tests, demo and benchmarks run comes from a package that
# scripts/install-deps.sh installs (tests/external_programs.sh); and the check does catch one
# that is not: with graphviz left out of the table, test_plan.c's `dot` must be reported.
set(check ${CMAKE_CURRENT_LIST_DIR}/external_programs.sh)
add_test(NAME external_programs_installed COMMAND bash ${check} ${PROJECT_SOURCE_DIR})
add_test(NAME external_programs_catches_unlisted
         COMMAND bash -c "t=$(mktemp -d) && trap 'rm -rf \"$t\"' EXIT && \
bash '${PROJECT_SOURCE_DIR}/scripts/install-deps.sh' --list --bench | grep -v '^graphviz ' \
> \"$t/table\" && { bash '${check}' '${PROJECT_SOURCE_DIR}' \"$t/table\" > \"$t/out\"; \
test $? = 1; } && grep -E 'tests/[a-z_]+\\.c runs dot ' \"$t/out\"")
set_tests_properties(external_programs_installed external_programs_catches_unlisted
                     PROPERTIES TIMEOUT 120)
