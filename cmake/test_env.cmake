# Included at the end of each folder that adds tests: every test of that folder gets the JIT's
# on-disk object cache (docs/performance.md) in the build tree, so the suite never writes to
# the user's ~/.cache (a test of the cache itself sets its own OTC_CACHE_DIR).
get_property(otc_folder_tests DIRECTORY PROPERTY TESTS)
if(otc_folder_tests)
  set_property(TEST ${otc_folder_tests} APPEND PROPERTY ENVIRONMENT
               "OTC_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
endif()
