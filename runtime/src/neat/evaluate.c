/* Parallel fitness evaluation: worker threads take genomes by index from a shared counter;
 * each genome's randomness comes from (seed, generation, index), so the results are the same
 * whatever the thread count or the order in which threads finish. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"

static _Thread_local otc_neat_flat *bound_scratch;

otc_neat_flat *otc_neat_eval_scratch(void) {
    return bound_scratch;
}

void otc_neat_bind_eval_scratch(otc_neat_flat *f) {
    bound_scratch = f;
}

static _Thread_local int bound_threads;

int otc_neat_eval_threads(void) {
    return bound_threads > 0 ? bound_threads : 1;
}

void otc_neat_bind_eval_threads(int n) {
    bound_threads = n;
}

otc_status otc_neat_reserve_scratch(otc_neat_population *p, int n) {
    if (n <= p->n_scratch) return OTC_OK;
    otc_neat_flat **a = realloc(p->scratch, sizeof *a * (size_t)n);
    if (!a) return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation scratch");
    p->scratch = a;
    for (; p->n_scratch < n; p->n_scratch++)
        if (!(p->scratch[p->n_scratch] = otc_neat_flat_new())) return OTC_ERR_NOMEM;
    return OTC_OK;
}

typedef struct {
    otc_neat_population *p;
    otc_neat_task *task;
    atomic_int next;
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
        return;
    }
    double penalty = p->config.complexity_penalty *
                     (otc_neat_genome_hidden_count(g) + otc_neat_genome_enabled_count(g));
    g->fitness = ev.fitness - penalty;
    g->evaluated = true;
    job->solved[i] = ev.solved;
}

typedef struct {
    eval_job *job;
    otc_neat_flat *scratch;
} worker_arg;

static void *worker(void *arg) {
    worker_arg *w = arg;
    eval_job *job = w->job;
    otc_neat_flat *outer = otc_neat_eval_scratch();
    otc_neat_bind_eval_scratch(w->scratch);
    for (;;) {
        int i = atomic_fetch_add(&job->next, 1);
        if (i >= job->p->n_genomes) break;
        if (!job->p->genomes[i]->evaluated) evaluate_one(job, i);
    }
    otc_neat_bind_eval_scratch(outer);
    return NULL;
}

otc_status otc_neat_evaluate_all(otc_neat_population *p, otc_neat_task *task, int threads,
                                 bool *solved) {
    int n = p->n_genomes;
    eval_job job = {.p = p, .task = task, .solved = solved};
    atomic_init(&job.next, 0);
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
    worker_arg *args = malloc(sizeof *args * (size_t)threads);
    otc_status rs = otc_neat_reserve_scratch(p, threads);
    if (!tid || !args || rs != OTC_OK) {
        free(tid);
        free(args);
        free(job.status);
        free(job.message);
        return rs != OTC_OK ? rs : otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    }
    for (int t = 0; t < threads; t++) args[t] = (worker_arg){&job, p->scratch[t]};
    int started = 0;
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&tid[t], NULL, worker, &args[t])) break;
        started = t;
    }
    worker(&args[0]); /* the calling thread works too */
    for (int t = 1; t <= started; t++) pthread_join(tid[t], NULL);
    free(tid);
    free(args);
    otc_status s = OTC_OK;
    for (int i = 0; i < n && s == OTC_OK; i++)
        if (job.status[i] != OTC_OK)
            s = otc_fail(job.status[i], "evaluating genome %d of generation %d: %s", i,
                         p->generation, job.message[i]);
    free(job.status);
    free(job.message);
    return s;
}
