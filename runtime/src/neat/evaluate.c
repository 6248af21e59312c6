/* Parallel fitness evaluation: the caller and the population's helper threads take genomes
 * one at a time from a shared counter; each genome's randomness comes from (seed, generation,
 * index), so the results are the same whatever the thread count or the order in which threads
 * finish, or whether the helpers start on a generation while reproduction still makes it. A
 * task with evaluate_lanes (the pole tasks) has each worker's genomes several at a time, each
 * lane taking the next from the same counter when its genome is done. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    struct ahead *ahead;     /* the next generation's evaluation, overlapping reproduction */

    /* The lanes' programs (evaluate_lanes): worker w's are lane_scratch[w * lanes ..]. */
    int n_lane_scratch;
    otc_neat_flat **lane_scratch;

    /* A batch's per-genome outcome, kept so a generation allocates nothing. */
    int cap_status, cap_message;
    otc_status *status;
    char (*message)[256];
};

/* OpenBLAS's thread count (weak, as blas_thread_shutdown_ below: another BLAS leaves them
 * NULL). */
extern void openblas_set_num_threads(int n) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));

/* The workers are evaluation's parallelism, one genome each: a BLAS call inside one (a
 * HyperNEAT substrate's layers) runs on the calling thread, not on OpenBLAS's threads as
 * well, which spin for the cores the workers need (visual, 20 generations on one thread on
 * the loaded 2-core machine: 1.2 to 1.4 s, against 1.5 to 12.5 s with OpenBLAS's two). So
 * while an evaluator lives OpenBLAS runs one thread; the last one freed restores its count. */
static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_evaluators, blas_threads_before;

static void blas_single_thread(bool on) {
    if (!openblas_set_num_threads || !openblas_get_num_threads) return;
    pthread_mutex_lock(&blas_lock);
    if (on && blas_evaluators++ == 0) {
        blas_threads_before = openblas_get_num_threads();
        if (blas_threads_before > 1) openblas_set_num_threads(1);
    } else if (!on && --blas_evaluators == 0 && blas_threads_before > 1) {
        openblas_set_num_threads(blas_threads_before);
    }
    pthread_mutex_unlock(&blas_lock);
}

static void quiet_blas_workers(void);

otc_neat_evaluator *otc_neat_evaluator_new(void) {
    otc_neat_evaluator *e = calloc(1, sizeof(otc_neat_evaluator));
    if (e) {
        blas_single_thread(true);
        quiet_blas_workers(); /* idle, they would spin for the first ~0.1 s */
    }
    return e;
}

static void pool_free(otc_neat_pool *pool);
static void ahead_free(struct ahead *a);

void otc_neat_evaluator_free(otc_neat_evaluator *e) {
    if (!e) return;
    blas_single_thread(false);
    pool_free(e->pool); /* its helpers sleep between jobs: nothing else to wait for */
    ahead_free(e->ahead);
    for (int i = 0; i < e->n_scratch; i++) otc_neat_flat_free(e->scratch[i]);
    free(e->scratch);
    free(e->status);
    free(e->message);
    for (int i = 0; i < e->n_lane_scratch; i++) otc_neat_flat_free(e->lane_scratch[i]);
    free(e->lane_scratch);
    free(e);
}

otc_neat_flat *otc_neat_evaluator_scratch(const otc_neat_evaluator *e) {
    return e && e->n_scratch ? e->scratch[0] : NULL;
}

/* At least n programs in *arr (holding *have). */
static otc_status reserve_flats(otc_neat_flat ***arr, int *have, int n) {
    if (n <= *have) return OTC_OK;
    otc_neat_flat **a = realloc(*arr, sizeof *a * (size_t)n);
    if (!a) return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation scratch");
    *arr = a;
    for (; *have < n; (*have)++)
        if (!(a[*have] = otc_neat_flat_new())) return OTC_ERR_NOMEM;
    return OTC_OK;
}

/* Lanes each of n workers runs for task (0: one genome at a time): evaluate_lanes' count for
 * a job that does not evaluate copies. */
static int job_lanes(const otc_neat_task *task, const otc_neat_config *c, bool copies) {
    /* lanes run one episode per genome: averaged episodes go one genome at a time */
    if (c && c->episodes > 1) return 0;
    return task->evaluate_lanes && task->lanes > 0 && !copies ? task->lanes : 0;
}

/* Programs for n workers, and for their lanes when the task evaluates by lanes. */
static otc_status reserve_scratch(otc_neat_evaluator *e, const otc_neat_task *task, bool copies,
                                  int n) {
    otc_status s = reserve_flats(&e->scratch, &e->n_scratch, n);
    if (s == OTC_OK)
        s = reserve_flats(&e->lane_scratch, &e->n_lane_scratch, n * job_lanes(task, NULL, copies));
    return s;
}

uint64_t otc_neat_genome_seed(const otc_neat_population *p, int i) {
    return otc_neat_mix_seed(p->seed, (uint64_t)p->generation, (uint64_t)i + 1);
}

typedef struct {
    const otc_neat_task *task;
    const otc_neat_config *c;
    otc_neat_genome *const *genomes;
    const uint64_t *seeds;
    int n;       /* genomes (a stream's room for them) */
    int workers; /* threads this job may use, the caller included */
    otc_neat_flat **scratch;
    int lanes; /* > 0: the task's evaluate_lanes with worker w's lane_scratch[w * lanes ..] */
    otc_neat_flat **lane_scratch;
    atomic_int next;
    atomic_bool failed; /* a failure ends the generation: no worker starts another genome */
    bool *solved;
    otc_status *status;
    char (*message)[256];
    /* A stream (the ahead job): genomes arrive while it runs; results go to fitness[] and
     * done[], the genomes stay untouched (each is evaluated as a copy when its evaluation
     * writes into it). */
    bool stream;
    otc_neat_pool *pool; /* whose lock and `more` guard ready and closed */
    atomic_int ready;    /* genomes[0 .. ready) may be taken */
    atomic_int waiting;  /* helpers asleep on `more` */
    bool closed;         /* no more will come */
    double *fitness;
    bool *done;
    otc_neat_genome **copies; /* NULL, or one per genome to evaluate in its stead */
} eval_job;

static void record_one(eval_job *job, int i, otc_neat_genome *g, otc_status s,
                       const otc_neat_eval *ev);

static void evaluate_one(eval_job *job, int i) {
    otc_neat_genome *g = job->genomes[i];
    if (job->copies) {
        otc_status cs = !job->copies[i] && !(job->copies[i] = otc_neat_genome_new())
                            ? otc_fail(OTC_ERR_NOMEM, "out of memory")
                            : otc_neat_genome_copy_into(job->copies[i], g);
        if (cs != OTC_OK) {
            record_one(job, i, g, cs, NULL); /* a failure: its message, no results */
            return;
        }
        g = job->copies[i];
    }
    otc_neat_eval ev;
    otc_neat_eval_reset(&ev);
    otc_status s = otc_neat_evaluate_episodes(job->task, job->c, g, job->seeds[i], job->c->episodes,
                                              NULL, &ev);
    record_one(job, i, g, s, &ev);
}

/* Genome i's evaluation (status s, fitness and solved in *ev, which a failure leaves unread),
 * evaluated as g. */
static void record_one(eval_job *job, int i, otc_neat_genome *g, otc_status s,
                       const otc_neat_eval *ev) {
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
    if (job->stream) {
        job->fitness[i] = ev->fitness - penalty;
        job->done[i] = true;
    } else {
        g->fitness = ev->fitness - penalty;
        g->evaluated = true;
    }
    job->solved[i] = ev->solved;
    if (!job->stream) { /* a stream's runs have none: novelty is evaluated without one */
        int nb = ev->n_bc < 0 ? 0 : ev->n_bc > OTC_NEAT_MAX_BC ? OTC_NEAT_MAX_BC : ev->n_bc;
        g->n_bc = nb;
        if (nb) memcpy(g->bc, ev->bc, sizeof *g->bc * (size_t)nb);
    }
}

static bool stream_wait(eval_job *job, int i);

/* ---- evaluation by lanes: a worker's genomes handed to the task's evaluate_lanes --------- */

struct otc_neat_feed {
    eval_job *job;
    int pending; /* taken from the counter but not ready yet (a stream's), or -1 */
    int taken;   /* genomes handed out */
};

/* take_genomes' loop, one genome per call. */
int otc_neat_feed_take(otc_neat_feed *f, bool wait, otc_neat_genome **g, uint64_t *seed) {
    eval_job *job = f->job;
    for (;;) {
        int i = f->pending;
        f->pending = -1;
        if (i < 0) i = atomic_fetch_add(&job->next, 1);
        if (i >= job->n || atomic_load(&job->failed)) return -1;
        if (job->stream) {
            /* Other lanes carry on meanwhile; the worker waits only when they are idle. */
            if (!wait && i >= atomic_load(&job->ready)) {
                f->pending = i;
                return -2;
            }
            if (!stream_wait(job, i)) return -1;
        } else if (job->genomes[i]->evaluated) {
            continue;
        }
        *g = job->genomes[i];
        *seed = job->seeds[i];
        f->taken++;
        return i;
    }
}

void otc_neat_feed_done(otc_neat_feed *f, int index, otc_status s, const otc_neat_eval *ev) {
    record_one(f->job, index, f->job->genomes[index], s, ev);
}

/* Worker w's genomes through the task's lanes; true when they took them all (false: the task
 * refused before taking any, and they go one at a time). */
static bool take_lanes(eval_job *job, int w) {
    otc_neat_feed f = {job, -1, 0};
    otc_status s =
        job->task->evaluate_lanes(job->task, job->c, &job->lane_scratch[w * job->lanes], &f);
    return s == OTC_OK || f.taken > 0;
}

/* Genomes one at a time from the job's counter until none is left, with worker w's program
 * bound. Evaluation times differ by orders of magnitude (a pole genome fails at step 10 or
 * balances for 100,000), so one at a time keeps the threads level; the counter costs
 * nanoseconds a genome. */
static void take_genomes(eval_job *job, int w) {
    if (job->lanes > 0 && take_lanes(job, w)) return;
    otc_neat_flat *outer = otc_neat_eval_scratch();
    otc_neat_bind_eval_scratch(job->scratch[w]);
    for (;;) {
        int i = atomic_fetch_add(&job->next, 1);
        if (i >= job->n || atomic_load(&job->failed)) break;
        if (job->stream) {
            if (!stream_wait(job, i)) break;
            evaluate_one(job, i);
        } else if (!job->genomes[i]->evaluated) {
            evaluate_one(job, i);
        }
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
    pthread_cond_t more; /* helpers: a stream's next genome is ready, or it is closed */
    atomic_uint epoch;   /* jobs posted so far (written under lock, spun on without) */
    eval_job *job;       /* the current job, NULL between jobs */
    otc_neat_pool_fn fn; /* or the current call (otc_neat_pool_start), NULL between calls */
    void *ctx;
    int fn_workers;  /* threads the call may use, the caller included */
    atomic_int busy; /* helpers inside the job (written under lock, spun on without) */
    bool shutdown;
    int n, cap; /* helpers started, room in helpers */
    helper_arg **helpers;
};

/* A thread about to sleep on a condition spins this long first: the next job, genome or
 * helper's end often comes sooner than a sleeping thread wakes (tens of microseconds, more
 * on a busy machine), and a spin in vain costs one core this little. */
#define POOL_SPIN_NS 50000

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spins until *i (or *u, when i is NULL) is in [lo, hi] (true) or POOL_SPIN_NS have passed
 * (false). */
static bool spin_until(const atomic_int *i, const atomic_uint *u, long long lo, long long hi) {
    long long end = 0;
    for (int k = 0;; k++) {
        long long x = i ? atomic_load(i) : (long long)atomic_load(u);
        if (x >= lo && x <= hi) return true;
        if ((k & 63) == 0) {
            long long t = now_ns();
            if (!end)
                end = t + POOL_SPIN_NS;
            else if (t > end)
                return false;
        }
        cpu_relax();
    }
}

/* Spins until *v != old (true) or POOL_SPIN_NS have passed (false). The epoch only grows, so
 * "changed" is "above old" (at the wrap, "back at 0"); a spin that misses only means the
 * caller sleeps on its condition variable, which checks exactly. */
static bool spin_while_uint(const atomic_uint *v, unsigned old) {
    if (old == UINT_MAX) return spin_until(NULL, v, 0, 0);
    return spin_until(NULL, v, (long long)old + 1, UINT_MAX);
}

static void *helper(void *arg) {
    helper_arg *h = arg;
    otc_neat_pool *pool = h->pool;
    unsigned seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        if (!pool->shutdown && atomic_load(&pool->epoch) == seen) {
            pthread_mutex_unlock(&pool->lock);
            spin_while_uint(&pool->epoch, seen);
            pthread_mutex_lock(&pool->lock);
        }
        while (!pool->shutdown && pool->epoch == seen) pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->shutdown) break;
        seen = pool->epoch;
        eval_job *job = pool->job;
        otc_neat_pool_fn fn = pool->fn;
        void *ctx = pool->ctx;
        /* Too late for that job (it is done), or not needed in it. */
        if (job ? h->w >= job->workers : !fn || h->w >= pool->fn_workers) continue;
        pool->busy++;
        pthread_mutex_unlock(&pool->lock);
        if (job)
            take_genomes(job, h->w);
        else
            fn(ctx, h->w);
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
    pthread_cond_destroy(&pool->more);
    free(pool);
}

/* OpenBLAS's (when otc links it): ends its worker threads, which it starts again at its next
 * threaded call. Weak, so another BLAS leaves it NULL. */
extern void blas_thread_shutdown_(void) __attribute__((weak));

/* OpenBLAS starts its workers as the library loads, and an idle worker spins on sched_yield for
 * about 0.1 s before it sleeps: on two cores that spin takes half a core from the first
 * helper for the first ~80 ms (a csv hybrid run's whole first generation and more). Evaluation
 * never calls BLAS at NEAT's sizes, so the workers are ended once, as the first pool starts;
 * a later large matmul brings them back. */
static void quiet_blas_workers(void) {
    static atomic_flag done = ATOMIC_FLAG_INIT;
    if (blas_thread_shutdown_ && !atomic_flag_test_and_set(&done)) blas_thread_shutdown_();
}

/* e's pool with at least `helpers` helpers (fewer when threads cannot be started: the job
 * then runs on those there are). NULL only when there is no pool at all. */
static otc_neat_pool *pool_with(otc_neat_evaluator *e, int helpers) {
    otc_neat_pool *pool = e->pool;
    if (!pool) {
        quiet_blas_workers();
        if (!(pool = calloc(1, sizeof *pool))) return NULL;
        if (pthread_mutex_init(&pool->lock, NULL)) {
            free(pool);
            return NULL;
        }
        pthread_cond_init(&pool->wake, NULL);
        pthread_cond_init(&pool->idle, NULL);
        pthread_cond_init(&pool->more, NULL);
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

/* The helpers join `job` (none when pool is NULL). */
static void pool_post(otc_neat_pool *pool, eval_job *job) {
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    pool->job = job;
    pool->epoch++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
}

/* Every genome is taken; wait for the helpers still evaluating theirs. */
static void pool_finish(otc_neat_pool *pool) {
    if (!pool) return;
    /* No helper inside: nobody can enter either, as the job is done (its counter spent, its
     * epoch seen or skipped); spinning first saves a sleeping caller's wake-up. */
    spin_until(&pool->busy, NULL, 0, 0);
    pthread_mutex_lock(&pool->lock);
    while (pool->busy > 0) pthread_cond_wait(&pool->idle, &pool->lock);
    pool->job = NULL;
    pool->fn = NULL;
    pthread_mutex_unlock(&pool->lock);
}

int otc_neat_pool_start(otc_neat_evaluator *e, int workers, otc_neat_pool_fn fn, void *ctx) {
    if (!e || workers < 2) return 0;
    otc_neat_pool *pool = pool_with(e, workers - 1);
    if (!pool || pool->n == 0) return 0;
    pthread_mutex_lock(&pool->lock);
    pool->job = NULL;
    pool->fn = fn;
    pool->ctx = ctx;
    pool->fn_workers = workers;
    pool->epoch++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    return pool->n < workers - 1 ? pool->n : workers - 1;
}

void otc_neat_pool_wait(otc_neat_evaluator *e) {
    if (e) pool_finish(e->pool);
}

int otc_neat_pool_helpers(const otc_neat_evaluator *e) {
    return e && e->pool ? e->pool->n : 0;
}

static _Thread_local otc_neat_evaluator *bound_evaluator;

otc_neat_evaluator *otc_neat_eval_evaluator(void) {
    return bound_evaluator;
}

void otc_neat_bind_eval_evaluator(otc_neat_evaluator *e) {
    bound_evaluator = e;
}

/* A stream's genome i, once reproduction has handed it over; false when it never will. */
static bool stream_wait(eval_job *job, int i) {
    if (i < atomic_load(&job->ready)) return true;
    /* Reproduction makes a child in microseconds: it usually comes before a sleep would end. */
    if (spin_until(&job->ready, NULL, i + 1, INT_MAX)) return true;
    otc_neat_pool *pool = job->pool;
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add(&job->waiting, 1); /* before `ready` is read again: see ahead_push */
    while (i >= atomic_load(&job->ready) && !job->closed)
        pthread_cond_wait(&pool->more, &pool->lock);
    atomic_fetch_sub(&job->waiting, 1);
    bool ok = i < atomic_load(&job->ready);
    pthread_mutex_unlock(&pool->lock);
    return ok;
}

otc_status otc_neat_evaluate_batch(otc_neat_evaluator *e, const otc_neat_task *task,
                                   const otc_neat_config *c, const otc_neat_batch *b, int threads) {
    int n = b->n;
    if (n <= 0) return OTC_OK;
    if (threads < 1) threads = 1;
    if (threads > n) threads = n;
    otc_status rs = reserve_scratch(e, task, false, threads);
    if (rs != OTC_OK) return rs;
    eval_job job = {.task = task,
                    .c = c,
                    .genomes = b->genomes,
                    .seeds = b->seeds,
                    .n = n,
                    .workers = threads,
                    .scratch = e->scratch,
                    .lanes = job_lanes(task, c, false),
                    .lane_scratch = e->lane_scratch,
                    .solved = b->solved};
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, false);
    if (!otc_neat_grow((void **)&e->status, &e->cap_status, n + 1, sizeof *e->status) ||
        !otc_neat_grow((void **)&e->message, &e->cap_message, n + 1, sizeof *e->message))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    job.status = e->status;
    job.message = e->message;
    memset(job.status, 0, sizeof *job.status * (size_t)n); /* OTC_OK: skipped genomes pass */
    otc_neat_pool *pool = threads > 1 ? pool_with(e, threads - 1) : NULL;
    pool_post(pool, &job);
    take_genomes(&job, 0); /* the calling thread works too */
    pool_finish(pool);
    otc_status s = OTC_OK;
    for (int i = 0; i < n && s == OTC_OK; i++)
        if (job.status[i] != OTC_OK)
            s = otc_fail(job.status[i], "evaluating genome %d of generation %d: %s",
                         b->index ? b->index[i] : i, b->generation, job.message[i]);
    return s;
}

/* ---- evaluation overlapping reproduction ------------------------------------------------- */

/* The next generation's evaluation while reproduction makes it: results for the genomes as
 * handed over, in their order, recorded by that generation's otc_neat_evaluate_all. */
struct ahead {
    eval_job job;
    bool running;  /* posted, not yet ended */
    bool valid;    /* results for `generation`'s genomes[0 .. made) */
    bool overflow; /* more genomes than room: the results are not used */
    int generation, cap, made;
    otc_neat_genome **genomes;
    uint64_t *seeds;
    double *fitness;
    bool *done, *solved;
    otc_status *status;
    char (*message)[256];
    otc_neat_genome **copies; /* for evaluations that write into the genome */
};

enum { AHEAD_WAKE_EVERY = 8 };

static void ahead_free(struct ahead *a) {
    if (!a) return;
    for (int i = 0; i < a->cap; i++) otc_neat_genome_free(a->copies[i]);
    free(a->genomes);
    free(a->seeds);
    free(a->fitness);
    free(a->done);
    free(a->solved);
    free(a->status);
    free(a->message);
    free(a->copies);
    free(a);
}

/* Room for n genomes' results (the copies kept from earlier generations). */
static bool ahead_reserve(struct ahead *a, int n) {
    if (n <= a->cap) return true;
#define GROW(f)                                                                                    \
    do {                                                                                           \
        void *q = realloc(a->f, sizeof *a->f * (size_t)n);                                         \
        if (!q) return false;                                                                      \
        a->f = q;                                                                                  \
    } while (0)
    GROW(genomes);
    GROW(seeds);
    GROW(fitness);
    GROW(done);
    GROW(solved);
    GROW(status);
    GROW(message);
    GROW(copies);
#undef GROW
    for (int i = a->cap; i < n; i++) a->copies[i] = NULL;
    a->cap = n;
    return true;
}

otc_status otc_neat_ahead_begin(otc_neat_population *p, const otc_neat_task *task, int threads) {
    if (threads < 2) return OTC_OK;
    if (!p->evaluator && !(p->evaluator = otc_neat_evaluator_new()))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    otc_neat_evaluator *e = p->evaluator;
    if (!e->ahead && !(e->ahead = calloc(1, sizeof *e->ahead)))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    struct ahead *a = e->ahead;
    const otc_neat_config *c = &p->config;
    int n = c->pop_size;
    a->valid = false;
    /* Hybrid training writes trained weights into a Lamarckian genome (task_csv.c,
     * task_seq.c): evaluated as a copy, the genome stays as speciation must see it and takes
     * the trained genes when its results are recorded. */
    bool writes = c->lamarckian && c->train_steps > 0;
    if (!ahead_reserve(a, n) || reserve_scratch(e, task, writes, threads) != OTC_OK)
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    otc_neat_pool *pool = pool_with(e, threads - 1);
    if (!pool) return OTC_OK; /* no threads: evaluation waits for the next generation */
    a->generation = p->generation + 1;
    a->made = 0;
    a->overflow = false;
    for (int i = 0; i < n; i++) {
        /* otc_neat_genome_seed's, for the generation reproduction makes */
        a->seeds[i] = otc_neat_mix_seed(p->seed, (uint64_t)a->generation, (uint64_t)i + 1);
        a->done[i] = a->solved[i] = false;
        a->status[i] = OTC_OK;
    }
    a->job = (eval_job){.task = task,
                        .c = c,
                        .genomes = a->genomes,
                        .seeds = a->seeds,
                        .n = n,
                        .workers = threads,
                        .scratch = e->scratch,
                        .lanes = job_lanes(task, c, writes),
                        .lane_scratch = e->lane_scratch,
                        .solved = a->solved,
                        .status = a->status,
                        .message = a->message,
                        .stream = true,
                        .pool = pool,
                        .fitness = a->fitness,
                        .done = a->done,
                        .copies = writes ? a->copies : NULL};
    atomic_init(&a->job.next, 0);
    atomic_init(&a->job.failed, false);
    atomic_init(&a->job.ready, 0);
    atomic_init(&a->job.waiting, 0);
    a->running = true;
    pool_post(pool, &a->job);
    return OTC_OK;
}

void otc_neat_ahead_push(otc_neat_population *p, otc_neat_genome *g) {
    struct ahead *a = p->evaluator ? p->evaluator->ahead : NULL;
    if (!a || !a->running) return;
    if (a->made >= a->cap) {
        a->overflow = true;
        return;
    }
    a->genomes[a->made++] = g;
    atomic_store(&a->job.ready, a->made);
    /* A helper that caught up is woken once a few more genomes are ready (a wake-up costs
     * more than making an XOR child), or at the end. `waiting` is counted before the helper
     * reads `ready` again, and read here after `ready` is stored (both sequentially
     * consistent): a helper this push does not see waiting sees the new `ready`. */
    if (a->made % AHEAD_WAKE_EVERY == 0 && atomic_load(&a->job.waiting) > 0) {
        otc_neat_pool *pool = a->job.pool;
        pthread_mutex_lock(&pool->lock);
        pthread_cond_broadcast(&pool->more);
        pthread_mutex_unlock(&pool->lock);
    }
}

void otc_neat_ahead_end(otc_neat_population *p) {
    struct ahead *a = p->evaluator ? p->evaluator->ahead : NULL;
    if (!a || !a->running) return;
    otc_neat_pool *pool = a->job.pool;
    pthread_mutex_lock(&pool->lock);
    a->job.closed = true;
    pthread_cond_broadcast(&pool->more);
    pthread_mutex_unlock(&pool->lock);
    take_genomes(&a->job, 0); /* the calling thread joins the rest */
    pool_finish(pool);
    a->running = false;
    a->valid = !a->overflow;
}

/* The ahead results when they are this generation's genomes' (reproduction's children, not
 * replaced since): recorded as evaluate_batch records them; the first failure is reported as
 * it would have been. */
static otc_status ahead_record(otc_neat_population *p, bool *solved) {
    struct ahead *a = p->evaluator ? p->evaluator->ahead : NULL;
    if (!a || !a->valid) return OTC_OK;
    a->valid = false;
    if (a->generation != p->generation || a->made != p->n_genomes) return OTC_OK;
    for (int i = 0; i < a->made; i++)
        if (a->genomes[i] != p->genomes[i] || p->genomes[i]->evaluated) return OTC_OK;
    for (int i = 0; i < a->made; i++)
        if (a->status[i] != OTC_OK)
            return otc_fail(a->status[i], "evaluating genome %d of generation %d: %s", i,
                            a->generation, a->message[i]);
    bool copies = a->job.copies != NULL;
    for (int i = 0; i < a->made; i++) {
        if (!a->done[i]) continue;
        otc_neat_genome *g = p->genomes[i];
        if (copies) {
            int species = g->species;
            otc_status s = otc_neat_genome_copy_into(g, a->copies[i]);
            if (s != OTC_OK) return s;
            g->species = species;
        }
        g->fitness = a->fitness[i];
        g->evaluated = true;
        solved[i] = a->solved[i];
    }
    return OTC_OK;
}

otc_status otc_neat_evaluate_all(otc_neat_population *p, otc_neat_task *task,
                                 const otc_neat_remote *remote, int threads, bool *solved) {
    int n = p->n_genomes;
    if (!p->evaluator && !(p->evaluator = otc_neat_evaluator_new()))
        return otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    otc_status rs = ahead_record(p, solved);
    if (rs != OTC_OK) return rs;
    /* The batch: the genomes not yet evaluated, each with its randomness and its index (in
     * the population's grow-only arrays). */
    otc_neat_genome **genomes =
        otc_neat_scratch(p, OTC_NEAT_SCRATCH_EVAL_GENOMES, n + 1, sizeof *genomes);
    uint64_t *seeds = otc_neat_scratch(p, OTC_NEAT_SCRATCH_EVAL_SEEDS, n + 1, sizeof *seeds);
    int *index = otc_neat_scratch(p, OTC_NEAT_SCRATCH_EVAL_INDEX, n + 1, sizeof *index);
    bool *flags = otc_neat_scratch(p, OTC_NEAT_SCRATCH_EVAL_FLAGS, n + 1, sizeof *flags);
    otc_status s = OTC_OK;
    if (!genomes || !seeds || !index || !flags) {
        s = otc_fail(OTC_ERR_NOMEM, "out of memory for evaluation");
    } else {
        memset(flags, 0, sizeof *flags * ((size_t)n + 1));
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (p->genomes[i]->evaluated) continue;
            genomes[m] = p->genomes[i];
            seeds[m] = otc_neat_genome_seed(p, i);
            index[m++] = i;
        }
        otc_neat_batch b = {genomes, seeds, index, m, p->generation, flags};
        s = remote ? remote->evaluate(remote->ctx, task, &p->config, &b, threads)
                   : otc_neat_evaluate_batch(p->evaluator, task, &p->config, &b, threads);
        for (int k = 0; k < m; k++) solved[index[k]] = flags[k];
    }
    return s;
}
