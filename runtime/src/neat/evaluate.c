/* Parallel fitness evaluation: the caller and the population's helper threads take genomes
 * one at a time from a shared counter; each genome's randomness comes from (seed, generation,
 * index), so the results are the same whatever the thread count or the order in which threads
 * finish. */
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
    int n;       /* genomes */
    int workers; /* threads this job may use, the caller included */
    otc_neat_flat **scratch;
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

/* Genomes one at a time from the job's counter until none is left, with worker w's program
 * bound. Evaluation times differ by orders of magnitude (a pole genome fails at step 10 or
 * balances for 100,000), so one at a time keeps the threads level; the counter costs
 * nanoseconds a genome. */
static void take_genomes(eval_job *job, int w) {
    otc_neat_flat *outer = otc_neat_eval_scratch();
    otc_neat_bind_eval_scratch(job->scratch[w]);
    for (;;) {
        int i = atomic_fetch_add(&job->next, 1);
        if (i >= job->n) break;
        if (!job->p->genomes[i]->evaluated) evaluate_one(job, i);
    }
    otc_neat_bind_eval_scratch(outer);
}

/* The population's helper threads, started once and kept: each generation posts its job and
 * wakes them, the caller works too, and waits only for helpers that joined the job, never
 * for one the system has not scheduled yet (on a busy machine a thread started per
 * generation can take milliseconds to run, longer than a whole XOR generation). */
typedef struct {
    otc_neat_pool *pool;
    int w; /* worker index: helpers are 1, 2, ... (the caller is 0) */
    pthread_t tid;
} helper_arg;

struct otc_neat_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* helpers: a new job, or shut down */
    pthread_cond_t idle; /* the caller: no helper is inside the job any more */
    unsigned epoch;      /* jobs posted so far */
    eval_job *job;       /* the current job, NULL between jobs */
    int busy;            /* helpers inside the job */
    bool shutdown;
    int n, cap; /* helpers started, room in helpers */
    helper_arg **helpers;
};

static void *helper(void *arg) {
    helper_arg *h = arg;
    otc_neat_pool *pool = h->pool;
    unsigned seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->shutdown && pool->epoch == seen) pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->shutdown) break;
        seen = pool->epoch;
        eval_job *job = pool->job;
        /* Too late for that job (it is done), or not needed in it. */
        if (!job || h->w >= job->workers) continue;
        pool->busy++;
        pthread_mutex_unlock(&pool->lock);
        take_genomes(job, h->w);
        pthread_mutex_lock(&pool->lock);
        if (--pool->busy == 0) pthread_cond_signal(&pool->idle);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

void otc_neat_pool_free(otc_neat_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    pool->shutdown = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int k = 0; k < pool->n; k++) {
        pthread_join(pool->helpers[k]->tid, NULL);
        free(pool->helpers[k]);
    }
    free(pool->helpers);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->idle);
    free(pool);
}

/* p's pool with at least `helpers` helpers (fewer when threads cannot be started: the job
 * then runs on those there are). NULL only when there is no pool at all. */
static otc_neat_pool *pool_with(otc_neat_population *p, int helpers) {
    otc_neat_pool *pool = p->pool;
    if (!pool) {
        if (!(pool = calloc(1, sizeof *pool))) return NULL;
        if (pthread_mutex_init(&pool->lock, NULL)) {
            free(pool);
            return NULL;
        }
        pthread_cond_init(&pool->wake, NULL);
        pthread_cond_init(&pool->idle, NULL);
        p->pool = pool;
    }
    while (pool->n < helpers) {
        if (pool->n == pool->cap) {
            int cap = pool->cap ? 2 * pool->cap : 4;
            helper_arg **a = realloc(pool->helpers, sizeof *a * (size_t)cap);
            if (!a) break;
            pool->helpers = a;
            pool->cap = cap;
        }
        helper_arg *h = malloc(sizeof *h);
        if (!h) break;
        *h = (helper_arg){pool, pool->n + 1, 0};
        if (pthread_create(&h->tid, NULL, helper, h)) {
            free(h);
            break;
        }
        pool->helpers[pool->n++] = h;
    }
    return pool;
}

otc_status otc_neat_evaluate_all(otc_neat_population *p, otc_neat_task *task, int threads,
                                 bool *solved) {
    int n = p->n_genomes;
    if (threads < 1) threads = 1;
    if (threads > n) threads = n > 0 ? n : 1;
    otc_status rs = otc_neat_reserve_scratch(p, threads);
    if (rs != OTC_OK) return rs;
    eval_job job = {
        .p = p, .task = task, .n = n, .workers = threads, .scratch = p->scratch, .solved = solved};
    atomic_init(&job.next, 0);
    job.status = calloc((size_t)n + 1, sizeof *job.status);
    job.message = calloc((size_t)n + 1, sizeof *job.message);
    if (!job.status || !job.message) {
        free(job.status);
        free(job.message);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    }
    otc_neat_pool *pool = threads > 1 ? pool_with(p, threads - 1) : NULL;
    if (pool) {
        pthread_mutex_lock(&pool->lock);
        pool->job = &job;
        pool->epoch++;
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->lock);
    }
    take_genomes(&job, 0); /* the calling thread works too */
    if (pool) {
        /* Every genome is taken; wait for the helpers still evaluating theirs. */
        pthread_mutex_lock(&pool->lock);
        while (pool->busy > 0) pthread_cond_wait(&pool->idle, &pool->lock);
        pool->job = NULL;
        pthread_mutex_unlock(&pool->lock);
    }
    otc_status s = OTC_OK;
    for (int i = 0; i < n && s == OTC_OK; i++)
        if (job.status[i] != OTC_OK)
            s = otc_fail(job.status[i], "evaluating genome %d of generation %d: %s", i,
                         p->generation, job.message[i]);
    free(job.status);
    free(job.message);
    return s;
}
