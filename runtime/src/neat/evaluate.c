/* Parallel fitness evaluation: worker threads take genomes by index from a shared counter;
 * each genome's randomness comes from (seed, generation, index), so the results are the same
 * whatever the thread count or the order in which threads finish. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

typedef struct {
    otc_neat_population *p;
    otc_neat_task *task;
    atomic_int next;
    atomic_bool failed; /* a failure ends the generation: no worker starts another genome */
    bool *solved;
    otc_status *status;
    char (*message)[256];
} eval_job;

static void evaluate_one(eval_job *job, int i) {
    otc_neat_population *p = job->p;
    otc_neat_genome *g = p->genomes[i];
    otc_neat_eval ev = {0, false};
    uint64_t seed = otc_neat_mix_seed(p->seed, (uint64_t)p->generation, (uint64_t)i + 1);
    otc_status s = job->task->evaluate(job->task, &p->config, g, seed, &ev);
    job->status[i] = s;
    if (s != OTC_OK) {
        snprintf(job->message[i], sizeof job->message[i], "%s", otc_last_error());
        atomic_store(&job->failed, true);
        return;
    }
    double penalty = p->config.complexity_penalty *
                     (otc_neat_genome_hidden_count(g) + otc_neat_genome_enabled_count(g));
    g->fitness = ev.fitness - penalty;
    g->evaluated = true;
    job->solved[i] = ev.solved;
}

static void *worker(void *arg) {
    eval_job *job = arg;
    for (;;) {
        int i = atomic_fetch_add(&job->next, 1);
        if (i >= job->p->n_genomes || atomic_load(&job->failed)) break;
        if (!job->p->genomes[i]->evaluated) evaluate_one(job, i);
    }
    return NULL;
}

otc_status otc_neat_evaluate_all(otc_neat_population *p, otc_neat_task *task, int threads,
                                 bool *solved) {
    int n = p->n_genomes;
    eval_job job = {.p = p, .task = task, .solved = solved};
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, false);
    job.status = calloc((size_t)n + 1, sizeof *job.status);
    job.message = calloc((size_t)n + 1, sizeof *job.message);
    if (!job.status || !job.message) {
        free(job.status);
        free(job.message);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    }
    if (threads < 1) threads = 1;
    if (threads > n) threads = n > 0 ? n : 1;
    pthread_t *tid = malloc(sizeof *tid * (size_t)threads);
    int started = 0;
    if (tid)
        for (int t = 1; t < threads; t++) {
            if (pthread_create(&tid[t], NULL, worker, &job)) break;
            started = t;
        }
    worker(&job); /* the calling thread works too */
    for (int t = 1; t <= started; t++) pthread_join(tid[t], NULL);
    free(tid);
    otc_status s = OTC_OK;
    for (int i = 0; i < n && s == OTC_OK; i++)
        if (job.status[i] != OTC_OK)
            s = otc_fail(job.status[i], "evaluating genome %d of generation %d: %s", i,
                         p->generation, job.message[i]);
    free(job.status);
    free(job.message);
    return s;
}
