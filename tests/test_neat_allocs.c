/* Heap allocations of NEAT generations in steady state: evaluation, speciation and reproduction
 * reuse the population's memory, so a generation's allocations do not grow with the population
 * (this executable counts every malloc, calloc and realloc of the process, libotc's included). */
#include "harness.h"
#include "otc/neat.h"

/* The counter (skipped under AddressSanitizer, whose allocator must see every block). */
#include "../bench/count_allocs.h"

/* The task's evaluation with success never reported: the run goes on as long as measured. */
static otc_status (*real_evaluate)(const otc_neat_task *, const otc_neat_config *,
                                   otc_neat_genome *, uint64_t, otc_neat_eval *);
static otc_status never_solved(const otc_neat_task *task, const otc_neat_config *c,
                               otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    otc_status s = real_evaluate(task, c, g, seed, out);
    out->solved = false;
    return s;
}

enum { WARM = 40, MEASURED = 21 };

/* The median of a generation's allocations over MEASURED generations after WARM ones of
 * `task` at population `pop` on `threads` threads (-1 when the run failed). The median: a
 * generation where the population's largest genome first outgrows a power of two gives every
 * recycled genome room for it at once (some hundreds of reallocations a few times a run). */
static long steady_allocations(const char *ini, const char *task_name, int pop, int threads) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    if (otc_neat_config_load(ini, &c) != OTC_OK) return -1;
    c.pop_size = pop;
    c.no_fitness_termination = true;
    if (otc_neat_task_create(task_name, &c, &task) != OTC_OK) return -1;
    real_evaluate = task->evaluate;
    task->evaluate = never_solved;
    /* dpnv's generalisation test runs off the population's memory (its own threads and
     * buffers, task.c): what is measured here is evaluation and reproduction. */
    task->confirm = NULL;
    otc_neat_population *p = NULL;
    long counts[MEASURED], median = -1;
    if (otc_neat_population_new(&c, 7, &p) == OTC_OK) {
        otc_neat_step_options o = {.threads = threads};
        bool ok = true;
        for (int g = 0; g < WARM && ok; g++) ok = otc_neat_step(p, task, &o, NULL) == OTC_OK;
        for (int g = 0; g < MEASURED && ok; g++) {
            long a0 = atomic_load(&allocations);
            ok = otc_neat_step(p, task, &o, NULL) == OTC_OK;
            counts[g] = atomic_load(&allocations) - a0;
        }
        if (ok && !otc_neat_extinct(p)) {
            for (int i = 1; i < MEASURED; i++)
                for (int j = i; j > 0 && counts[j - 1] > counts[j]; j--) {
                    long t = counts[j];
                    counts[j] = counts[j - 1];
                    counts[j - 1] = t;
                }
            median = counts[MEASURED / 2];
        }
    }
    otc_neat_population_free(p);
    otc_neat_task_free(task);
    return median;
}

static void check_task(const char *ini, const char *task_name, int threads) {
    if (!OTC_COUNTS_ALLOCS) {
        printf("skipped: allocations are not counted under AddressSanitizer\n");
        exit(77);
    }
    long small = steady_allocations(ini, task_name, 150, threads);
    long large = steady_allocations(ini, task_name, 600, threads);
    printf("%s, %d thread(s): a generation's allocations (median of %d): %ld at population 150, "
           "%ld at 600\n",
           task_name, threads, MEASURED, small, large);
    REQUIRE(small >= 0 && large >= 0);
    /* One allocation per evaluation would be 150 and 600. What is left does not depend on the
     * population: the evaluator's two records of a batch (evaluate.c) and now and then the
     * growth of a grow-only array (a new innovation, more species than ever). */
    CHECK_MSG(small <= 4, "%ld at population 150", small);
    CHECK_MSG(large <= 4, "%ld at population 600", large);
}

TEST(neat_allocs_xor) {
    check_task(OTC_SOURCE_DIR "/examples/neat/xor.ini", "xor", 1);
}

TEST(neat_allocs_xor_threads) {
    check_task(OTC_SOURCE_DIR "/examples/neat/xor.ini", "xor", 2);
}

TEST(neat_allocs_dpnv) {
    check_task(OTC_SOURCE_DIR "/examples/neat/dpnv.ini", "dpnv", 1);
}

TEST(neat_allocs_dpnv_threads) {
    check_task(OTC_SOURCE_DIR "/examples/neat/dpnv.ini", "dpnv", 2);
}

TEST(neat_allocs_csv) {
    check_task(OTC_SOURCE_DIR "/examples/neat/circle.ini",
               "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv", 1);
}

TEST(neat_allocs_csv_threads) {
    check_task(OTC_SOURCE_DIR "/examples/neat/circle.ini",
               "csv:" OTC_SOURCE_DIR "/examples/data/circle.csv", 2);
}
