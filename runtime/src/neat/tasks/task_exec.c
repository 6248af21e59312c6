/* The exec:PROGRAM task: an environment written in any language, run as a child process that
 * speaks a line protocol over its standard input and output (one process per evaluation
 * thread, reused across evaluations). Every read has a timeout, so an environment that
 * crashes, hangs or answers garbage is a clear error, never a hang.
 *
 *   otc: reset SEED              (a new episode; SEED makes it reproducible)
 *   env: obs X1 .. Xn            (n = num_inputs)
 *   otc: act Y1 .. Ym            (m = num_outputs: the network's outputs)
 *   env: step REWARD DONE X1 .. Xn   (DONE 0 or 1; the observation may be left out at 1)
 *   ... until DONE is 1, or [Task] max_steps steps: then the next episode's 'reset' comes
 *   mid-episode (an environment starts over on 'reset' whenever it comes). The fitness is
 *   the sum of the rewards; the genome solves the task when it reaches fitness_threshold.
 *   otc closes the pipe at the end of the run.
 *
 * Each environment runs in its own process group, and no process of it outlives otc: the
 * group is killed when its environment ends (normally or on an error), at exit, and on
 * SIGINT, SIGTERM and SIGHUP (a handler kills every live group, then the signal does what it
 * did before). Only SIGKILL of otc itself leaves them running.
 *
 *   env: bc B1 .. Bk             (optional, before any 'step' line: the episode's behaviour
 *                                 for novelty search, k <= 16; the last one sent counts) */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "neat_internal.h"
#include "otc/neat_exec.h"

extern char **environ;

/* Longest line an environment may send. */
#define EXEC_MAX_LINE (1 << 20)

typedef struct {
    pid_t pid; /* also its process group's id; reaped only in proc_end */
    int fd;
    bool started; /* it has answered once (the start-up timeout is behind it) */
    char *buf;
    size_t len, cap;
    size_t taken; /* bytes of the line read last, its newline included */
} env_proc;

typedef struct {
    char program[512];
    double timeout; /* seconds per answer */
    double startup; /* seconds for a new process's first answer (interpreter start, imports) */
    int max_steps;  /* steps of one episode */
    pthread_mutex_t lock;
    env_proc **idle;
    int n_idle, cap_idle;
} exec_ctx;

/* ---- the live process groups, for the exit and signal paths: a fixed table of atomics a
 * signal handler may read (a slot 0 is free) ---- */

#define EXEC_MAX_GROUPS 4096
static _Atomic int live_groups[EXEC_MAX_GROUPS];
static struct sigaction previous[3];
static const int fatal_signals[3] = {SIGINT, SIGTERM, SIGHUP};

static void kill_live_groups(void) {
    for (int i = 0; i < EXEC_MAX_GROUPS; i++) {
        int g = atomic_load(&live_groups[i]);
        if (g > 0) kill(-g, SIGKILL);
    }
}

void otc_neat_exec_end_all(void) {
    kill_live_groups();
}

/* Kills the groups, puts back what the signal did before and raises it again. */
static void on_fatal_signal(int sig) {
    int saved = errno;
    kill_live_groups();
    for (int i = 0; i < 3; i++)
        if (fatal_signals[i] == sig) sigaction(sig, &previous[i], NULL);
    raise(sig);
    errno = saved;
}

/* Once per process: the exit hook, and the handler for the signals whose disposition is the
 * default (a program that handles or ignores one keeps its choice). */
static void install_cleanup(void) {
    atexit(kill_live_groups);
    for (int i = 0; i < 3; i++) {
        struct sigaction now;
        if (sigaction(fatal_signals[i], NULL, &now) != 0 || now.sa_handler != SIG_DFL) continue;
        struct sigaction sa = {.sa_handler = on_fatal_signal};
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND; /* a second signal during the handler ends otc at once */
        if (sigaction(fatal_signals[i], &sa, &previous[i]) != 0) previous[i] = now;
    }
}
static pthread_once_t cleanup_once = PTHREAD_ONCE_INIT;

/* Records group g (false when the table is full: it is then only ended by proc_end). */
static void group_add(int g) {
    for (int i = 0; i < EXEC_MAX_GROUPS; i++) {
        int free_slot = 0;
        if (atomic_compare_exchange_strong(&live_groups[i], &free_slot, g)) return;
    }
}

static void group_remove(int g) {
    for (int i = 0; i < EXEC_MAX_GROUPS; i++) {
        int was = g;
        if (atomic_compare_exchange_strong(&live_groups[i], &was, 0)) return;
    }
}

/* Whether process pid has exited, without reaping it: while it is a zombie its id cannot be
 * reused, so killing its group afterwards cannot hit another program's. */
static bool exited(pid_t pid, siginfo_t *info) {
    siginfo_t si = {0};
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return true;
    if (info) *info = si;
    return si.si_pid == pid;
}

/* Ends an environment: its end of the socket closed (a well-behaved one sees end of input
 * and exits), then, after up to `grace` seconds, its whole process group killed (what it
 * started too, even when it exited itself), and it reaped. */
static void proc_end(env_proc *p, double grace) {
    if (!p) return;
    if (p->fd >= 0) close(p->fd);
    if (p->pid > 0) {
        for (int i = 0; i < (int)(grace * 100) && !exited(p->pid, NULL); i++)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
        kill(-p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        group_remove(p->pid);
    }
    free(p->buf);
    free(p);
}

static void proc_kill(env_proc *p) {
    proc_end(p, 0);
}

static otc_status proc_spawn(const exec_ctx *x, env_proc **out) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return otc_fail(OTC_ERR_IO, "exec:%s: cannot make a socket pair: %s", x->program,
                        strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    /* dup2 clears close-on-exec on the copies: the child's stdin and stdout are its end. */
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    /* Its own process group, so what the shell starts is ended with it. */
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    char *argv[] = {"sh", "-c", (char *)x->program, NULL};
    pid_t pid = -1;
    int rc = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        return otc_fail(OTC_ERR_IO, "exec:%s: cannot start it: %s", x->program, strerror(rc));
    }
    env_proc *p = calloc(1, sizeof *p);
    if (!p) {
        close(sv[0]);
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return otc_fail(OTC_ERR_NOMEM, "out of memory");
    }
    p->pid = pid;
    p->fd = sv[0];
    group_add(pid);
    *out = p;
    return OTC_OK;
}

/* Why the environment stopped talking: its exit status when it has exited. */
static otc_status gone(const exec_ctx *x, env_proc *p, const char *after) {
    siginfo_t si = {0};
    bool done = false;
    for (int i = 0; i < 50 && !(done = exited(p->pid, &si)); i++) /* up to 0.5 s to exit */
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    char why[96];
    if (done && si.si_pid == p->pid && si.si_code == CLD_EXITED)
        snprintf(why, sizeof why, "exited with status %d", si.si_status);
    else if (done && si.si_pid == p->pid)
        snprintf(why, sizeof why, "was killed by signal %d", si.si_status);
    else
        snprintf(why, sizeof why, "closed its output");
    return otc_fail(OTC_ERR_IO, "exec:%s: the environment %s %s", x->program, why, after);
}

static otc_status send_line(const exec_ctx *x, env_proc *p, const char *line, size_t n) {
    while (n > 0) {
        ssize_t w = send(p->fd, line, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return gone(x, p, "before reading otc's line");
        line += w;
        n -= (size_t)w;
    }
    return OTC_OK;
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The next line (without its newline) into *line, valid until the next read. */
static otc_status read_line(const exec_ctx *x, env_proc *p, const char *after, char **line) {
    /* A new process's first answer: the start-up timeout (start-up does not count against
     * the per-answer one). */
    double timeout = p->started ? x->timeout : x->startup;
    double deadline = now_seconds() + timeout;
    size_t scanned = 0;
    for (;;) {
        char *nl = p->len > scanned ? memchr(p->buf + scanned, '\n', p->len - scanned) : NULL;
        if (nl) {
            *nl = '\0';
            *line = p->buf;
            p->taken = (size_t)(nl - p->buf) + 1;
            p->started = true;
            return OTC_OK;
        }
        scanned = p->len;
        if (p->len >= EXEC_MAX_LINE)
            return otc_fail(OTC_ERR_FORMAT, "exec:%s: a line longer than %d bytes %s", x->program,
                            EXEC_MAX_LINE, after);
        double left = deadline - now_seconds();
        if (left <= 0)
            return otc_fail(OTC_ERR_IO, "exec:%s: no answer within %g s %s%s", x->program, timeout,
                            after, p->started ? "" : " (start-up)");
        struct pollfd pf = {.fd = p->fd, .events = POLLIN};
        int r = poll(&pf, 1, (int)ceil(left * 1000));
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) continue; /* the deadline check above reports it */
        if (p->cap - p->len < 4096) {
            size_t cap = p->cap ? 2 * p->cap : 8192;
            char *b = realloc(p->buf, cap);
            if (!b) return otc_fail(OTC_ERR_NOMEM, "out of memory");
            p->buf = b;
            p->cap = cap;
        }
        ssize_t got = recv(p->fd, p->buf + p->len, p->cap - p->len - 1, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return gone(x, p, after);
        p->len += (size_t)got;
    }
}

/* Drops the line read last from the buffer. */
static void consume_line(env_proc *p) {
    memmove(p->buf, p->buf + p->taken, p->len - p->taken);
    p->len -= p->taken;
    p->taken = 0;
}

/* A short copy of a line for messages, printable. */
static const char *shown(const char *line, char *buf, size_t len) {
    snprintf(buf, len, "%s", line);
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 32 || (unsigned char)*c > 126) *c = '?';
    if (strlen(line) >= len - 1 && len > 4) strcpy(buf + len - 4, "...");
    return buf;
}

/* `said`: the line as shown() made it before parsing took it apart. */
static otc_status garbage(const exec_ctx *x, const char *said, const char *want, long step) {
    return otc_fail(OTC_ERR_FORMAT, "exec:%s: step %ld: the environment said '%s', expected %s",
                    x->program, step, said, want);
}

/* A 'bc' line's numbers into res (false when it is not one, or malformed). */
static bool behaviour_line(char *line, otc_neat_eval *res) {
    double b[OTC_NEAT_SHORT_BC];
    int n = otc_neat_exec_parse_bc(line, b, OTC_NEAT_SHORT_BC);
    if (n == 0) return false;
    res->n_bc = n;
    for (int i = 0; i < n; i++) res->bc[i] = (float)b[i];
    return true;
}

/* One episode with the network in r: its total reward (and behaviour, when the environment
 * gives one, in res). */
static otc_status episode(const exec_ctx *x, env_proc *p, const otc_neat_config *c,
                          otc_neat_runner *r, uint64_t seed, double *total, otc_neat_eval *res) {
    int n_in = c->num_inputs, n_out = c->num_outputs;
    double *v = malloc(sizeof *v * (size_t)(n_in + 3));
    float *obs = malloc(sizeof *obs * (size_t)n_in), *act = malloc(sizeof *act * (size_t)n_out);
    size_t cap = 32 + 20 * (size_t)n_out;
    char *out = malloc(cap), *line = NULL;
    otc_status s = v && obs && act && out ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory");
    *total = 0;
    otc_neat_runner_reset(r);
    int len = s ? 0 : snprintf(out, cap, "reset %llu\n", (unsigned long long)seed);
    if (!s) s = send_line(x, p, out, (size_t)len);
    if (!s) s = read_line(x, p, "after 'reset'", &line);
    otc_neat_exec_reply reply;
    char said[80];
    if (!s) shown(line, said, sizeof said);
    if (!s && !otc_neat_exec_parse(line, false, n_in, v, &reply)) {
        char want[96];
        snprintf(want, sizeof want, "'obs' and %d numbers (num_inputs)", n_in);
        s = garbage(x, said, want, 0);
    }
    for (long step = 1; !s; step++) {
        for (int i = 0; i < n_in; i++) obs[i] = (float)v[i];
        consume_line(p);
        if (step > x->max_steps) break; /* the episode ends here, scored so far */
        if ((s = otc_neat_runner_forward(r, obs, 1, act))) break;
        size_t at = (size_t)snprintf(out, cap, "act");
        for (int k = 0; k < n_out; k++)
            at += (size_t)snprintf(out + at, cap - at, " %.9g", isfinite(act[k]) ? act[k] : 0.0);
        out[at++] = '\n';
        char after[64];
        snprintf(after, sizeof after, "after 'act' (step %ld)", step);
        if ((s = send_line(x, p, out, at)) || (s = read_line(x, p, after, &line))) break;
        while (!strncmp(line, "bc", 2) && behaviour_line(line, res)) {
            consume_line(p);
            if ((s = read_line(x, p, after, &line))) break;
        }
        if (s) break;
        shown(line, said, sizeof said);
        if (!otc_neat_exec_parse(line, true, n_in, v, &reply)) {
            char want[128];
            snprintf(want, sizeof want, "'step REWARD DONE' (DONE 0 or 1) and %d numbers", n_in);
            s = garbage(x, said, want, step);
            break;
        }
        *total += reply.reward;
        if (reply.done) {
            consume_line(p);
            break;
        }
    }
    free(v);
    free(obs);
    free(act);
    free(out);
    return s;
}

static otc_status exec_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                                otc_neat_genome *g, uint64_t seed, otc_neat_eval *res) {
    exec_ctx *x = task->ctx;
    env_proc *p = NULL;
    pthread_mutex_lock(&x->lock);
    if (x->n_idle > 0) p = x->idle[--x->n_idle];
    pthread_mutex_unlock(&x->lock);
    otc_status s = p ? OTC_OK : proc_spawn(x, &p);
    if (s) return s;
    otc_neat_runner r;
    double total = 0;
    if ((s = otc_neat_runner_open(task, c, g, &r)) == OTC_OK) {
        s = episode(x, p, c, &r, seed, &total, res);
        otc_neat_runner_close(&r);
    }
    if (s == OTC_OK && !isfinite(total))
        s = otc_fail(OTC_ERR_FORMAT, "exec:%s: the rewards add up to %g", x->program, total);
    if (s) { /* a process in an unknown state is not reused */
        proc_kill(p);
        return s;
    }
    pthread_mutex_lock(&x->lock);
    if (x->n_idle == x->cap_idle) {
        int cap = x->cap_idle ? 2 * x->cap_idle : 8;
        env_proc **grown = realloc(x->idle, sizeof *grown * (size_t)cap);
        if (grown) {
            x->idle = grown;
            x->cap_idle = cap;
        }
    }
    if (x->n_idle < x->cap_idle)
        x->idle[x->n_idle++] = p;
    else
        proc_kill(p);
    pthread_mutex_unlock(&x->lock);
    res->fitness = total;
    res->solved = !c->no_fitness_termination && total >= c->fitness_threshold;
    return OTC_OK;
}

static void exec_destroy(otc_neat_task *t) {
    exec_ctx *x = t->ctx;
    if (!x) return;
    for (int i = 0; i < x->n_idle; i++) proc_end(x->idle[i], 1.0);
    free(x->idle);
    pthread_mutex_destroy(&x->lock);
    free(x);
    t->ctx = NULL;
}

otc_status otc_neat_exec_task_create(const char *program, const otc_neat_config *c,
                                     otc_neat_task **out) {
    if (!program[0] || strlen(program) >= sizeof((exec_ctx *)0)->program)
        return otc_fail(OTC_ERR_ARG, "exec: needs a program (exec:PROGRAM, under %zu bytes)",
                        sizeof((exec_ctx *)0)->program);
    otc_neat_task *t = calloc(1, sizeof *t);
    exec_ctx *x = calloc(1, sizeof *x);
    if (!t || !x) {
        free(t);
        free(x);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a task");
    }
    snprintf(x->program, sizeof x->program, "%s", program);
    x->timeout = c->exec_timeout;
    x->startup = c->exec_startup_timeout;
    x->max_steps = c->exec_max_steps;
    pthread_once(&cleanup_once, install_cleanup);
    pthread_mutex_init(&x->lock, NULL);
    snprintf(t->name, sizeof t->name, "exec:%s", program);
    t->evaluate = exec_evaluate;
    t->destroy = exec_destroy;
    t->ctx = x;
    t->n_inputs = c->num_inputs;
    t->n_outputs = c->num_outputs;
    t->n_bc = -1; /* as the environment's 'bc' lines say */
    *out = t;
    return OTC_OK;
}
