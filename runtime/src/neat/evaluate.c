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

/* Flat programs and helper threads, kept across batches (a population holds one; so does an
 * MPI rank serving evaluations). */
struct otc_neat_evaluator {
    int n_scratch;           /* workers' flat programs */
    otc_neat_flat **scratch; /* (index 0: the calling thread, which also runs confirm) */
    otc_neat_pool *pool;     /* helper threads, started at the first need */
};

otc_neat_evaluator *otc_neat_evaluator_new(void) {
    return calloc(1, sizeof(otc_neat_evaluator));
}

static void pool_free(otc_neat_pool *pool);

void otc_neat_evaluator_free(otc_neat_evaluator *e) {
    if (!e) return;
    pool_free(e->pool); /* its helpers sleep between jobs: nothing else to wait for */
    for (int i = 0; i < e->n_scratch; i++) otc_neat_flat_free(e->scratch[i]);
    free(e->scratch);
    free(e);
}

otc_neat_flat *otc_neat_evaluator_scratch(const otc_neat_evaluator *e) {
    return e && e->n_scratch ? e->scratch[0] : NULL;
}

static otc_status reserve_scratch(otc_neat_evaluator *e, int n) {
    if (n <= e->n_scratch) return OTC_OK;
    otc_neat_flat **a = realloc(e->scratch, sizeof *a * (size_t)n);
    if (!a) return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation scratch");
    e->scratch = a;
    for (; e->n_scratch < n; e->n_scratch++)
        if (!(e->scratch[e->n_scratch] = otc_neat_flat_new())) return OTC_ERR_NOMEM;
    return OTC_OK;
}

uint64_t otc_neat_genome_seed(const otc_neat_population *p, int i) {
    return otc_neat_mix_seed(p->seed, (uint64_t)p->generation, (uint64_t)i + 1);
}

typedef struct {
    const otc_neat_task *task;
    const otc_neat_config *c;
    const otc_neat_batch *b;
    int n;       /* genomes */
    int workers; /* threads this job may use, the caller included */
    otc_neat_flat **scratch;
    atomic_int next;
    atomic_bool failed; /* a failure ends the generation: no worker starts another genome */
    bool *solved;
    otc_status *status;
    char (*message)[256];
} eval_job;

static void evaluate_one(eval_job *job, int i) {
    otc_neat_genome *g = job->b->genomes[i];
    otc_neat_eval ev = {0, false};
    otc_status s = job->task->evaluate(job->task, job->c, g, job->b->seeds[i], &ev);
    job->status[i] = s;
    if (s != OTC_OK) {
        snprintf(job->message[i], sizeof job->message[i], "%s", otc_last_error());
        atomic_store(&job->failed, true);
        return;
    }
    /* Counted only when they weigh: ev.fitness - 0.0 is ev.fitness either way. */
    double cp = job->c->complexity_penalty;
    double penalty =
        cp != 0 ? cp * (otc_neat_genome_hidden_count(g) + otc_neat_genome_enabled_count(g)) : 0.0;
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
        if (i >= job->n || atomic_load(&job->failed)) break;
        if (!job->b->genomes[i]->evaluated) evaluate_one(job, i);
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

static void pool_free(otc_neat_pool *pool) {
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

/* e's pool with at least `helpers` helpers (fewer when threads cannot be started: the job
 * then runs on those there are). NULL only when there is no pool at all. */
static otc_neat_pool *pool_with(otc_neat_evaluator *e, int helpers) {
    otc_neat_pool *pool = e->pool;
    if (!pool) {
        if (!(pool = calloc(1, sizeof *pool))) return NULL;
        if (pthread_mutex_init(&pool->lock, NULL)) {
            free(pool);
            return NULL;
        }
        pthread_cond_init(&pool->wake, NULL);
        pthread_cond_init(&pool->idle, NULL);
        e->pool = pool;
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

otc_status otc_neat_evaluate_batch(otc_neat_evaluator *e, const otc_neat_task *task,
                                   const otc_neat_config *c, const otc_neat_batch *b, int threads) {
    int n = b->n;
    if (n <= 0) return OTC_OK;
    if (threads < 1) threads = 1;
    if (threads > n) threads = n;
    otc_status rs = reserve_scratch(e, threads);
    if (rs != OTC_OK) return rs;
    eval_job job = {.task = task,
                    .c = c,
                    .b = b,
                    .n = n,
                    .workers = threads,
                    .scratch = e->scratch,
                    .solved = b->solved};
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, false);
    job.status = calloc((size_t)n + 1, sizeof *job.status);
    job.message = calloc((size_t)n + 1, sizeof *job.message);
    if (!job.status || !job.message) {
        free(job.status);
        free(job.message);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    }
    otc_neat_pool *pool = threads > 1 ? pool_with(e, threads - 1) : NULL;
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
            s = otc_fail(job.status[i], "evaluating genome %d of generation %d: %s",
                         b->index ? b->index[i] : i, b->generation, job.message[i]);
    free(job.status);
    free(job.message);
    return s;
}

otc_status otc_neat_evaluate_all(otc_neat_population *p, otc_neat_task *task,
                                 const otc_neat_remote *remote, int threads, bool *solved) {
    int n = p->n_genomes;
    if (!p->evaluator && !(p->evaluator = otc_neat_evaluator_new()))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    /* The batch: every genome (evaluated ones are skipped), or for a remote evaluator only
     * those not yet evaluated, each with its randomness and its index. */
    otc_neat_genome **genomes = malloc(sizeof *genomes * ((size_t)n + 1));
    uint64_t *seeds = malloc(sizeof *seeds * ((size_t)n + 1));
    int *index = malloc(sizeof *index * ((size_t)n + 1));
    bool *flags = calloc((size_t)n + 1, sizeof *flags);
    otc_status s = OTC_OK;
    if (!genomes || !seeds || !index || !flags) {
        s = otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    } else {
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (remote && p->genomes[i]->evaluated) continue;
            genomes[m] = p->genomes[i];
            seeds[m] = otc_neat_genome_seed(p, i);
            index[m++] = i;
        }
        otc_neat_batch b = {genomes, seeds, index, m, p->generation, flags};
        s = remote ? remote->evaluate(remote->ctx, task, &p->config, &b, threads)
                   : otc_neat_evaluate_batch(p->evaluator, task, &p->config, &b, threads);
        for (int k = 0; k < m; k++) solved[index[k]] = flags[k];
    }
    free(genomes);
    free(seeds);
    free(index);
    free(flags);
    return s;
}
