/* dpnv's confirm test on threads, whose helpers start on the generalisation while the calling
 * thread still runs the 100,000-step trial: against the one-thread path and the pole module's
 * own champion test run by a plain flat-program agent (independent of task.c's threading). */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "otc/neat.h"
#include "otc/neat_flat.h"
#include "otc/neat_genome.h"
#include "otc/pole.h"

#include "dpnv_champion.h"
#include "flat_agent.h"

/* The reference: pole.h's champion test with the genome's flat program as the policy. */
static void reference(const otc_neat_config *c, const otc_neat_genome *g, int *long_steps,
                      int *general, int *success) {
    flat_agent a = {otc_neat_flat_new()};
    REQUIRE(a.f && otc_neat_flat_build(a.f, g, c) == OTC_OK);
    otc_pole_agent agent = {flat_policy, flat_reset, &a};
    REQUIRE(otc_dpnv_champion_test(&agent, long_steps, general, success) == OTC_OK);
    otc_neat_flat_free(a.f);
}

/* otc_neat_confirm on 1, 2, 3 and 4 threads agrees with the reference. */
static void same_as_reference(const otc_neat_genome *g, bool want_long, bool want_solved) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/dpnv.ini", &c) == OTC_OK);
    REQUIRE(otc_neat_task_create("dpnv", &c, &task) == OTC_OK);
    int long_steps = -1, general = -1, success = -1;
    reference(&c, g, &long_steps, &general, &success);
    /* The case's premise: the trial runs long enough for the helpers to start (they start
     * after 5,000 steps), then passes or fails as the case wants. */
    CHECK_MSG(long_steps > 5000, "trial %d steps", long_steps);
    CHECK_MSG((long_steps == OTC_DPOLE_SUCCESS_STEPS) == want_long, "trial %d steps", long_steps);
    CHECK(success == want_solved);
    for (int threads = 1; threads <= 4; threads++) {
        bool solved = !want_solved;
        double score = -1;
        REQUIRE(otc_neat_confirm(task, &c, g, threads, &solved, &score) == OTC_OK);
        CHECK_MSG(solved == want_solved, "threads %d", threads);
        CHECK_MSG(score == general, "threads %d: generalisation %g, reference %d", threads, score,
                  general);
    }
    otc_neat_task_free(task);
}

/* The champion passes the trial: the helpers' head start and the caller's chunks add up to
 * the reference's count (312, as test_neat_flat.c's one-thread run). */
TEST(neat_dpnv_confirm_speculation_completes) {
    otc_neat_genome *g = NULL;
    REQUIRE(otc_neat_genome_from_json(dpnv_champion, &g) == OTC_OK);
    same_as_reference(g, true, true);
    int long_steps, general, success;
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/dpnv.ini", &c) == OTC_OK);
    reference(&c, g, &long_steps, &general, &success);
    CHECK_MSG(general == 312, "reference generalisation %d", general);
    otc_neat_genome_free(g);
}

/* The champion with connection innovation 2's weight weakened by 4% balances for
 * 44,817 steps, then the poles fall: the generalisation the helpers began is thrown away and
 * the score is 0, as on one thread (which never starts it). */
TEST(neat_dpnv_confirm_speculation_cancelled) {
    otc_neat_genome *g = NULL;
    REQUIRE(otc_neat_genome_from_json(dpnv_champion, &g) == OTC_OK);
    int k = 0;
    while (k < g->n_conns && g->conns[k].innov != 2) k++;
    REQUIRE(k < g->n_conns);
    g->conns[k].weight *= 0.96f;
    otc_neat_config c;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/dpnv.ini", &c) == OTC_OK);
    int long_steps, general, success;
    reference(&c, g, &long_steps, &general, &success);
    CHECK_MSG(long_steps == 44817, "reference trial %d steps", long_steps);
    CHECK(general == 0);
    same_as_reference(g, false, false);
    otc_neat_genome_free(g);
}
