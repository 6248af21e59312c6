/* NSGA-II's solver simplified along the size objective: its enabled connections tried off one at
 * a time, each try an evaluation, kept off while the genome still solves; then the hidden nodes
 * left without a path to an output removed. */
#include "neat_internal.h"

/* Why: the run stops at the first generation that solves, and NEAT only adds structure, so
 * the size objective has shaped the search but never the solver itself: on XOR a third of
 * the solvers carried connections that solve without them (bench/neat_selection.sh). A
 * greedy pass in gene order is deterministic (the same genome and seed give the same trials on
 * any thread count) and costs one evaluation per enabled connection, counted in the run's. */
otc_status otc_neat_simplify_solver(otc_neat_population *p, const otc_neat_task *task, int index,
                                    otc_neat_genome **out, int *trials) {
    const otc_neat_config *c = &p->config;
    *out = NULL;
    *trials = 0;
    int first = otc_neat_first_cost(c);
    otc_neat_objective size = first >= 0 ? c->objectives[first] : OTC_NEAT_OBJ_FITNESS;
    /* Only objectives a disabled connection lowers (hidden nodes stay counted). */
    if (size != OTC_NEAT_OBJ_CONNECTIONS && size != OTC_NEAT_OBJ_PARAMETERS &&
        size != OTC_NEAT_OBJ_COST)
        return OTC_OK;
    if (!p->evaluator && !(p->evaluator = otc_neat_evaluator_new()))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    otc_neat_genome *best = otc_neat_genome_new(), *trial = otc_neat_genome_new();
    otc_status s = best && trial ? otc_neat_genome_copy_into(best, p->genomes[index])
                                 : otc_fail(OTC_ERR_NOMEM, "out of memory simplifying a solver");
    uint64_t seed = otc_neat_genome_seed(p, index);
    for (int i = 0; s == OTC_OK && i < best->n_conns; i++) {
        if (!best->conns[i].enabled) continue;
        if ((s = otc_neat_genome_copy_into(trial, best)) != OTC_OK) break;
        trial->conns[i].enabled = false;
        trial->evaluated = false;
        bool solved = false;
        otc_neat_batch b = {.genomes = &trial,
                            .seeds = &seed,
                            .index = &index,
                            .n = 1,
                            .generation = p->generation,
                            .solved = &solved};
        if ((s = otc_neat_evaluate_batch(p->evaluator, task, c, &b, 1)) != OTC_OK) break;
        ++*trials;
        if (solved) { /* the trial is the new best; the old best is the next trial's room */
            otc_neat_genome *t = best;
            best = trial;
            trial = t;
        }
    }
    otc_neat_genome_free(trial);
    if (s != OTC_OK) {
        otc_neat_genome_free(best);
        return s;
    }
    otc_neat_prune_dangling(best); /* nodes the pass cut off from every output */
    *out = best;
    return OTC_OK;
}
