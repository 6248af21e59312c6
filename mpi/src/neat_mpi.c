/* NEAT evaluation over MPI: rank 0 hands out contiguous chunks of a generation's genomes
 * (compact binary, not JSON) as ranks ask for work, evaluates chunks itself between
 * messages, and takes back fitness, flags and trained weights. Each genome's randomness is
 * its own seed, so the results do not depend on which rank evaluated it. */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "otc/error.h"
#include "otc/neat.h"
#include "otc/neat_mpi.h"

enum { TAG_WORK = 1, TAG_RESULT = 2, TAG_STOP = 3 };
enum { MAGIC_WORK = 0x6f74636b, MAGIC_RESULT = 0x6f746372 };
enum { IN_FLIGHT = 2 };  /* chunks a rank holds at once: the next is there when one ends */
enum { MAX_CHUNK = 64 }; /* genomes in one message */

/* ---- a growable byte buffer and a bounded reader ---- */

typedef struct {
    unsigned char *data;
    size_t len, cap;
    bool failed;
} bytes;

static void put(bytes *b, const void *p, size_t n) {
    if (b->failed) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        unsigned char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_i32(bytes *b, int32_t v) {
    put(b, &v, sizeof v);
}

typedef struct {
    const unsigned char *p, *end;
    bool bad;
} reader;

static void get(reader *r, void *out, size_t n) {
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p, n);
    r->p += n;
}

static int32_t get_i32(reader *r) {
    int32_t v;
    get(r, &v, sizeof v);
    return v;
}

/* ---- genomes on the wire ---- */

static void put_genome(bytes *b, const otc_neat_genome *g, uint64_t seed) {
    put(b, &seed, sizeof seed);
    put_i32(b, g->n_nodes);
    put_i32(b, g->n_conns);
    for (int i = 0; i < g->n_nodes; i++) {
        const otc_neat_node *n = &g->nodes[i];
        put_i32(b, n->id);
        put_i32(b, (int32_t)n->type);
        put_i32(b, (int32_t)n->act);
        put_i32(b, (int32_t)n->agg);
        put(b, &n->bias, sizeof n->bias);
        put(b, &n->response, sizeof n->response);
        put(b, &n->tau, sizeof n->tau);
    }
    for (int i = 0; i < g->n_conns; i++) {
        const otc_neat_conn *c = &g->conns[i];
        put_i32(b, c->innov);
        put_i32(b, c->in);
        put_i32(b, c->out);
        put(b, &c->weight, sizeof c->weight);
        put_i32(b, c->enabled);
    }
}

/* Reads a genome into g (emptied first); false on a malformed message. */
static bool get_genome(reader *r, otc_neat_genome *g, uint64_t *seed) {
    get(r, seed, sizeof *seed);
    int32_t nn = get_i32(r), nc = get_i32(r);
    if (r->bad || nn < 0 || nc < 0 || (size_t)nn > (size_t)(r->end - r->p) / 20 ||
        (size_t)nc > (size_t)(r->end - r->p) / 20)
        return false;
    g->n_nodes = g->n_conns = 0;
    g->evaluated = false;
    g->fitness = 0;
    for (int i = 0; i < nn && !r->bad; i++) {
        otc_neat_node n = {0};
        n.id = get_i32(r);
        n.type = (otc_neat_node_type)get_i32(r);
        n.act = (otc_act)get_i32(r);
        n.agg = get_i32(r);
        get(r, &n.bias, sizeof n.bias);
        get(r, &n.response, sizeof n.response);
        get(r, &n.tau, sizeof n.tau);
        if (r->bad || otc_neat_genome_add_node(g, &n) != OTC_OK) return false;
    }
    for (int i = 0; i < nc && !r->bad; i++) {
        otc_neat_conn c = {0};
        c.innov = get_i32(r);
        c.in = get_i32(r);
        c.out = get_i32(r);
        get(r, &c.weight, sizeof c.weight);
        c.enabled = get_i32(r) != 0;
        if (r->bad || otc_neat_genome_add_conn(g, &c) != OTC_OK) return false;
    }
    return !r->bad;
}

/* What evaluation changes in a genome: fitness, flags, the behaviour (novelty search), and
 * the trained parameters. */
static void put_outcome(bytes *b, const otc_neat_genome *g, bool solved) {
    put(b, &g->fitness, sizeof g->fitness);
    put_i32(b, g->evaluated);
    put_i32(b, solved);
    put_i32(b, g->n_bc);
    put(b, g->bc, sizeof(float) * (size_t)g->n_bc);
    put_i32(b, g->n_nodes);
    put_i32(b, g->n_conns);
    for (int i = 0; i < g->n_nodes; i++) {
        put(b, &g->nodes[i].bias, sizeof(float));
        put(b, &g->nodes[i].response, sizeof(float));
    }
    for (int i = 0; i < g->n_conns; i++) put(b, &g->conns[i].weight, sizeof(float));
}

static bool get_outcome(reader *r, otc_neat_genome *g, bool *solved) {
    double fitness;
    get(r, &fitness, sizeof fitness);
    int32_t evaluated = get_i32(r), sol = get_i32(r), n_bc = get_i32(r);
    if (r->bad || n_bc < 0 || n_bc > OTC_NEAT_MAX_BC) return false;
    get(r, g->bc, sizeof(float) * (size_t)n_bc);
    g->n_bc = n_bc;
    int32_t nn = get_i32(r), nc = get_i32(r);
    if (r->bad || nn != g->n_nodes || nc != g->n_conns) return false;
    for (int i = 0; i < nn; i++) {
        get(r, &g->nodes[i].bias, sizeof(float));
        get(r, &g->nodes[i].response, sizeof(float));
    }
    for (int i = 0; i < nc; i++) get(r, &g->conns[i].weight, sizeof(float));
    g->fitness = fitness;
    g->evaluated = evaluated != 0;
    *solved = sol != 0;
    return !r->bad;
}

/* ---- rank 0 ---- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    int rank, size;
    double timeout;
    otc_neat_remote remote;
    otc_neat_evaluator *local;
    otc_neat_mpi_traffic traffic;
    bytes *out;           /* per rank, IN_FLIGHT messages being sent */
    MPI_Request *sending; /* their requests: a stopped rank must not block rank 0 */
    unsigned char *in;    /* one message received */
    int in_cap;
    int *in_flight;     /* per rank: chunks it holds */
    double *last_heard; /* per rank: when it last sent something or got work */
} coordinator;

static coordinator coord;

/* When another rank dies, mpirun names it and terminates the rest: rank 0 then says which
 * generation was running, and that nothing is half-written (checkpoints and outputs are
 * written whole or not at all), and exits 2. Only async-signal-safe calls here. */
static volatile sig_atomic_t running_generation = -1;

static void on_terminate(int sig) {
    (void)sig;
    char msg[200] = "otc evolve: stopped during generation ";
    size_t n = strlen(msg);
    char digits[16];
    int d = 0;
    long g = running_generation;
    if (g < 0) g = 0;
    do digits[d++] = (char)('0' + g % 10);
    while ((g /= 10) > 0 && d < (int)sizeof digits);
    while (d > 0) msg[n++] = digits[--d];
    static const char tail[] = ": another MPI rank ended (mpirun names it); files already "
                               "written are whole\n";
    memcpy(msg + n, tail, sizeof tail - 1);
    n += sizeof tail - 1;
    ssize_t w = write(STDERR_FILENO, msg, n);
    (void)w;
    otc_neat_exec_end_all(); /* no environment process outlives the rank */
    _exit(2);
}

static otc_status send_chunk(coordinator *k, int dest, const otc_neat_batch *b, int start,
                             int count) {
    /* A free slot: the rank holds fewer than IN_FLIGHT chunks, and the message of one it
     * answered has arrived, so its request completes. */
    int slot = -1;
    for (int j = 0; j < IN_FLIGHT && slot < 0; j++) {
        int done = 0;
        MPI_Test(&k->sending[dest * IN_FLIGHT + j], &done, MPI_STATUS_IGNORE);
        if (done) slot = dest * IN_FLIGHT + j;
    }
    if (slot < 0) { /* the rank has the message (it answered), the request just lags */
        int j = 0;
        MPI_Waitany(IN_FLIGHT, &k->sending[dest * IN_FLIGHT], &j, MPI_STATUS_IGNORE);
        slot = dest * IN_FLIGHT + j;
    }
    bytes *out = &k->out[slot];
    out->len = 0;
    put_i32(out, MAGIC_WORK);
    put_i32(out, b->generation);
    put_i32(out, start);
    put_i32(out, count);
    for (int i = start; i < start + count; i++) put_genome(out, b->genomes[i], b->seeds[i]);
    if (out->failed || out->len > INT32_MAX)
        return otc_fail(OTC_ERR_NOMEM, "MPI: out of memory packing genomes");
    MPI_Isend(out->data, (int)out->len, MPI_BYTE, dest, TAG_WORK, MPI_COMM_WORLD,
              &k->sending[slot]);
    k->traffic.bytes_sent += (long long)out->len;
    k->traffic.genomes_sent += count;
    k->in_flight[dest]++;
    k->last_heard[dest] = now();
    return OTC_OK;
}

static int chunk_size(const coordinator *k, int remaining) {
    int c = remaining / (4 * k->size);
    return c < 1 ? 1 : c > MAX_CHUNK ? MAX_CHUNK : c;
}

static otc_status receive_result(coordinator *k, const otc_neat_batch *b, MPI_Status *st,
                                 int *done) {
    int len = 0;
    MPI_Get_count(st, MPI_BYTE, &len);
    if (len > k->in_cap) {
        unsigned char *d = realloc(k->in, (size_t)len);
        if (!d) return otc_fail(OTC_ERR_NOMEM, "MPI: out of memory receiving results");
        k->in = d;
        k->in_cap = len;
    }
    int src = st->MPI_SOURCE;
    MPI_Recv(k->in, len, MPI_BYTE, src, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    k->traffic.bytes_received += len;
    k->in_flight[src]--;
    k->last_heard[src] = now();
    reader r = {k->in, k->in + len, false};
    int32_t magic = get_i32(&r), gen = get_i32(&r), start = get_i32(&r), count = get_i32(&r),
            status = get_i32(&r);
    if (r.bad || magic != MAGIC_RESULT || gen != b->generation || start < 0 || count < 1 ||
        start > b->n - count)
        return otc_fail(OTC_ERR_FORMAT, "MPI: rank %d sent a malformed result in generation %d",
                        src, b->generation);
    if (status != OTC_OK) {
        char msg[256];
        get(&r, msg, sizeof msg);
        msg[sizeof msg - 1] = '\0';
        return otc_fail((otc_status)status, "MPI rank %d: %s", src, msg);
    }
    for (int i = start; i < start + count; i++)
        if (!get_outcome(&r, b->genomes[i], &b->solved[i]))
            return otc_fail(OTC_ERR_FORMAT,
                            "MPI: rank %d sent a malformed result for genome %d of generation %d",
                            src, b->index ? b->index[i] : i, b->generation);
    *done += count;
    return OTC_OK;
}

static otc_status distribute(void *ctx, const otc_neat_task *task, const otc_neat_config *c,
                             const otc_neat_batch *b, int threads) {
    coordinator *k = ctx;
    int n = b->n, next = 0, done = 0;
    running_generation = b->generation;
    otc_status s = OTC_OK;
    for (int w = 1; w < k->size && s == OTC_OK; w++)
        for (int j = 0; j < IN_FLIGHT && next < n && s == OTC_OK; j++) {
            int cnt = chunk_size(k, n - next);
            s = send_chunk(k, w, b, next, cnt);
            next += cnt;
        }
    while (s == OTC_OK && done < n) {
        /* Results first: each answer is that rank's request for more. */
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            int src = st.MPI_SOURCE;
            s = receive_result(k, b, &st, &done);
            if (s == OTC_OK && next < n) {
                int cnt = chunk_size(k, n - next);
                s = send_chunk(k, src, b, next, cnt);
                next += cnt;
            }
            continue;
        }
        if (next < n) { /* rank 0's own share, a small chunk at a time */
            int cnt = chunk_size(k, n - next);
            if (cnt > threads && threads > 0) cnt = threads;
            otc_neat_batch mine = {
                b->genomes + next, b->seeds + next, b->index ? b->index + next : NULL, cnt,
                b->generation,     b->solved + next};
            s = otc_neat_evaluate_batch(k->local, task, c, &mine, threads);
            k->traffic.genomes_local += cnt;
            next += cnt;
            done += cnt;
            continue;
        }
        double t = now();
        for (int w = 1; w < k->size; w++)
            if (k->in_flight[w] > 0 && t - k->last_heard[w] > k->timeout)
                return otc_fail(OTC_ERR_STATE,
                                "MPI rank %d sent nothing for %.0f s during generation %d "
                                "(stopped or unreachable)",
                                w, k->timeout, b->generation);
        struct timespec nap = {0, 100000}; /* 0.1 ms: waiting costs no core */
        nanosleep(&nap, NULL);
    }
    return s;
}

otc_status otc_neat_mpi_init(int *rank, int *size) {
    int started = 0;
    MPI_Initialized(&started);
    if (!started && MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return otc_fail(OTC_ERR_STATE, "MPI: MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    coord.rank = *rank;
    coord.size = *size;
    return OTC_OK;
}

otc_status otc_neat_mpi_remote(const otc_neat_mpi_options *o, const otc_neat_remote **out) {
    coordinator *k = &coord;
    if (k->rank != 0) return otc_fail(OTC_ERR_STATE, "MPI: only rank 0 hands out genomes");
    k->timeout = o && o->timeout_seconds > 0 ? o->timeout_seconds : 600.0;
    if (!k->local) {
        k->local = otc_neat_evaluator_new();
        k->in_flight = calloc((size_t)k->size, sizeof *k->in_flight);
        k->last_heard = calloc((size_t)k->size, sizeof *k->last_heard);
        k->out = calloc((size_t)k->size * IN_FLIGHT, sizeof *k->out);
        k->sending = malloc(sizeof *k->sending * (size_t)k->size * IN_FLIGHT);
        if (!k->local || !k->in_flight || !k->last_heard || !k->out || !k->sending)
            return otc_fail(OTC_ERR_NOMEM, "MPI: out of memory");
        for (int i = 0; i < k->size * IN_FLIGHT; i++) k->sending[i] = MPI_REQUEST_NULL;
    }
    k->remote = (otc_neat_remote){distribute, k};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_terminate;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    *out = &k->remote;
    return OTC_OK;
}

otc_neat_mpi_traffic otc_neat_mpi_traffic_so_far(void) {
    return coord.traffic;
}

void otc_neat_mpi_finish(bool ok) {
    coordinator *k = &coord;
    if (!ok) {
        otc_neat_exec_end_all();
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (k->rank == 0) {
        if (k->sending) MPI_Waitall(k->size * IN_FLIGHT, k->sending, MPI_STATUSES_IGNORE);
        for (int w = 1; w < k->size; w++) MPI_Send(NULL, 0, MPI_BYTE, w, TAG_STOP, MPI_COMM_WORLD);
    }
    otc_neat_evaluator_free(k->local);
    for (int i = 0; k->out && i < k->size * IN_FLIGHT; i++) free(k->out[i].data);
    free(k->out);
    free(k->sending);
    free(k->in);
    free(k->in_flight);
    free(k->last_heard);
    memset(k, 0, sizeof *k);
    MPI_Finalize();
}

/* ---- ranks 1, 2, ... ---- */

typedef struct {
    otc_neat_genome **genomes;
    uint64_t *seeds;
    bool *solved;
    int cap;
} chunk;

static bool chunk_reserve(chunk *ch, int n) {
    if (n <= ch->cap) return true;
    otc_neat_genome **g = realloc(ch->genomes, sizeof *g * (size_t)n);
    if (!g) return false;
    ch->genomes = g;
    uint64_t *s = realloc(ch->seeds, sizeof *s * (size_t)n);
    if (!s) return false;
    ch->seeds = s;
    bool *f = realloc(ch->solved, sizeof *f * (size_t)n);
    if (!f) return false;
    ch->solved = f;
    for (; ch->cap < n; ch->cap++)
        if (!(ch->genomes[ch->cap] = otc_neat_genome_new())) return false;
    return true;
}

static void chunk_free(chunk *ch) {
    for (int i = 0; i < ch->cap; i++) otc_neat_genome_free(ch->genomes[i]);
    free(ch->genomes);
    free(ch->seeds);
    free(ch->solved);
}

/* Evaluates one work message and sends the result (or the error) back to rank 0. */
static otc_status serve_one(const otc_neat_task *task, const otc_neat_config *c, int threads,
                            otc_neat_evaluator *e, chunk *ch, const unsigned char *msg, int len,
                            bytes *out) {
    reader r = {msg, msg + len, false};
    int32_t magic = get_i32(&r), gen = get_i32(&r), start = get_i32(&r), count = get_i32(&r);
    if (r.bad || magic != MAGIC_WORK || count < 1 || count > MAX_CHUNK)
        return otc_fail(OTC_ERR_FORMAT, "MPI: malformed work message from rank 0");
    if (!chunk_reserve(ch, count)) return otc_fail(OTC_ERR_NOMEM, "MPI: out of memory");
    otc_status s = OTC_OK;
    for (int i = 0; i < count && s == OTC_OK; i++) {
        if (!get_genome(&r, ch->genomes[i], &ch->seeds[i]))
            s = otc_fail(OTC_ERR_FORMAT, "MPI: malformed genome %d from rank 0", start + i);
        else
            s = otc_neat_genome_validate(ch->genomes[i], c->feed_forward);
        ch->solved[i] = false;
    }
    if (s == OTC_OK) {
        otc_neat_batch b = {ch->genomes, ch->seeds, NULL, count, gen, ch->solved};
        s = otc_neat_evaluate_batch(e, task, c, &b, threads);
    }
    out->len = 0;
    put_i32(out, MAGIC_RESULT);
    put_i32(out, gen);
    put_i32(out, start);
    put_i32(out, count);
    put_i32(out, (int32_t)s);
    if (s != OTC_OK) {
        char m[256] = {0};
        snprintf(m, sizeof m, "%s", otc_last_error());
        put(out, m, sizeof m);
    } else {
        for (int i = 0; i < count; i++) put_outcome(out, ch->genomes[i], ch->solved[i]);
    }
    if (out->failed) return otc_fail(OTC_ERR_NOMEM, "MPI: out of memory packing results");
    MPI_Send(out->data, (int)out->len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
    return OTC_OK; /* an evaluation error went to rank 0, which reports it */
}

otc_status otc_neat_mpi_serve(const otc_neat_task *task, const otc_neat_config *c, int threads) {
    otc_neat_evaluator *e = otc_neat_evaluator_new();
    chunk ch = {0};
    bytes out = {0};
    unsigned char *msg = NULL;
    int cap = 0;
    otc_status s = e ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "MPI: out of memory");
    while (s == OTC_OK) {
        /* Polls with naps rather than MPI_Probe, which spins: an idle rank leaves its core to
         * rank 0 or to another rank on the same machine. */
        MPI_Status st;
        int flag = 0;
        MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (!flag) {
            struct timespec nap = {0, 50000};
            nanosleep(&nap, NULL);
            continue;
        }
        int len = 0;
        MPI_Get_count(&st, MPI_BYTE, &len);
        if (len > cap) {
            unsigned char *d = realloc(msg, (size_t)len);
            if (!d) {
                s = otc_fail(OTC_ERR_NOMEM, "MPI: out of memory");
                break;
            }
            msg = d;
            cap = len;
        }
        MPI_Recv(msg, len, MPI_BYTE, 0, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (st.MPI_TAG == TAG_STOP) break;
        if (st.MPI_TAG == TAG_WORK) s = serve_one(task, c, threads, e, &ch, msg, len, &out);
    }
    free(msg);
    free(out.data);
    chunk_free(&ch);
    otc_neat_evaluator_free(e);
    return s;
}
