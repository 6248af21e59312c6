/* A genome's fitness averaged over several episodes, each with its own seed: what [Task]
 * episodes asks of evolution and what `otc eval --episodes` reports. */
#include "neat_internal.h"
#include "otc/neat.h"

/* "epis": keeps episode seeds apart from the seeds mix_seed makes for genomes. */
#define EPISODE_STREAM 0x65706973u

uint64_t otc_neat_episode_seed(uint64_t seed, int episode) {
    return episode == 0 ? seed : otc_neat_mix_seed(seed, EPISODE_STREAM, (uint64_t)episode);
}

otc_status otc_neat_evaluate_episodes(const otc_neat_task *task, const otc_neat_config *c,
                                      otc_neat_genome *g, uint64_t seed, int episodes, double *each,
                                      otc_neat_eval *out) {
    if (!task || !c || !g || !out)
        return otc_fail(OTC_ERR_ARG, "otc_neat_evaluate_episodes: NULL argument");
    if (episodes < 1) episodes = 1;
    double sum = 0, bc[OTC_NEAT_MAX_BC];
    bool solved = true;
    int n_bc = -1;  /* the episodes' behaviour length; 0 once two disagree */
    int summed = 0; /* bc[0 .. summed) hold sums; the rest is not set */
    for (int k = 0; k < episodes; k++) {
        otc_neat_eval ev;
        otc_neat_eval_reset(&ev);
        otc_status s = task->evaluate(task, c, g, otc_neat_episode_seed(seed, k), &ev);
        if (s != OTC_OK) return s;
        if (each) each[k] = ev.fitness;
        sum += ev.fitness;
        solved &= ev.solved;
        n_bc = n_bc < 0 || n_bc == ev.n_bc ? ev.n_bc : 0;
        int nb = ev.n_bc < OTC_NEAT_MAX_BC ? ev.n_bc : OTC_NEAT_MAX_BC;
        for (; summed < nb; summed++) bc[summed] = 0;
        for (int i = 0; i < nb; i++) bc[i] += ev.bc[i];
    }
    out->fitness = episodes == 1 ? sum : sum / episodes;
    out->solved = solved;
    /* Novelty search: the behaviour is the episodes' mean behaviour. */
    out->n_bc = n_bc > 0 ? (n_bc < summed ? n_bc : summed) : 0;
    for (int i = 0; i < out->n_bc; i++) out->bc[i] = (float)(bc[i] / episodes);
    return OTC_OK;
}
