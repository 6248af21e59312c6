/* The harness's main: runs one named case or all of them and reports like ctest. */
#include "harness.h"

otc_test_case otc_tests[OTC_MAX_TESTS];
int otc_test_count;
int otc_test_failures;

int main(int argc, char **argv) {
    int ran = 0, failed = 0;
    for (int i = 0; i < otc_test_count; i++) {
        if (argc > 1 && strcmp(argv[1], otc_tests[i].name) != 0) continue;
        int before = otc_test_failures;
        otc_tests[i].fn();
        ran++;
        if (otc_test_failures != before) {
            failed++;
            fprintf(stderr, "FAIL %s\n", otc_tests[i].name);
        }
    }
    if (ran == 0) {
        fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(any)");
        return 2;
    }
    printf("%d passed, %d failed\n", ran - failed, failed);
    return failed ? 1 : 0;
}
