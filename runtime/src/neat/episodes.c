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
    double sum = 0;
    bool solved = true;
    for (int k = 0; k < episodes; k++) {
        otc_neat_eval ev = {0, false};
        otc_status s = task->evaluate(task, c, g, otc_neat_episode_seed(seed, k), &ev);
        if (s != OTC_OK) return s;
        if (each) each[k] = ev.fitness;
        sum += ev.fitness;
        solved &= ev.solved;
    }
    out->fitness = episodes == 1 ? sum : sum / episodes;
    out->solved = solved;
    return OTC_OK;
}
