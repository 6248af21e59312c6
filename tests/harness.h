/* A tiny test harness: TEST(name) cases, each registered with ctest by name (see
 * tests/CMakeLists.txt), run as `test_x NAME` or all at once without arguments. */
#ifndef OTC_TEST_HARNESS_H
#define OTC_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*otc_test_fn)(void);
typedef struct {
    const char *name;
    otc_test_fn fn;
} otc_test_case;

#define OTC_MAX_TESTS 512
extern otc_test_case otc_tests[OTC_MAX_TESTS];
extern int otc_test_count;
extern int otc_test_failures;

#define TEST(name)                                                                                 \
    static void test_##name(void);                                                                 \
    __attribute__((constructor)) static void register_##name(void) {                               \
        if (otc_test_count < OTC_MAX_TESTS)                                                        \
            otc_tests[otc_test_count++] = (otc_test_case){#name, test_##name};                     \
    }                                                                                              \
    static void test_##name(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            otc_test_failures++;                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            otc_test_failures++;                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double check_a_ = (a), check_b_ = (b);                                                     \
        if (!(fabs(check_a_ - check_b_) <= (tol))) {                                               \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g (tol %g)\n", __FILE__, \
                    __LINE__, #a, check_a_, #b, check_b_, (double)(tol));                          \
            otc_test_failures++;                                                                   \
        }                                                                                          \
    } while (0)

/* Stop the current case on a failed precondition (e.g. a NULL the rest would use). */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond);             \
            otc_test_failures++;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#endif
