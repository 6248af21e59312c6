/* `otc bench` helpers: the emitted C built with the system compiler (OTC_BENCH_CC_FLAGS) and
 * loaded with dlopen, and the graph exported as JSON for bench/torch_compare.py. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli_bench.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* CPU time of this thread plus that of the waited-for child processes (the C compiler),
 * which a loaded machine does not stretch as it stretches the wall clock. */
static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    struct rusage r;
    double kids = 0;
    if (getrusage(RUSAGE_CHILDREN, &r) == 0)
        kids = (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e3 +
               (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e3;
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6 + kids;
}

static void *sym(otc_bench_c *c, const char *suffix) {
    char name[96];
    snprintf(name, sizeof name, "%s_%s", c->name, suffix);
    return dlsym(c->so, name);
}

/* The build's files and then its directory, the paths formatted before any signal can come:
 * an interrupted or terminated bench removes them in its handler (unlink and rmdir are
 * async-signal-safe) rather than leaving /tmp/otc-bench-* behind. One build lives at a time;
 * have_build_paths alone says whether its files are still there. */
static char build_paths[4][160];
static volatile sig_atomic_t have_build_paths;
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction previous[3];

static void unlink_build_paths(void) {
    for (int i = 0; i < 3; i++) unlink(build_paths[i]);
    rmdir(build_paths[3]);
}

static void on_signal(int sig) {
    if (have_build_paths) unlink_build_paths();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void track_files(const otc_bench_c *c) {
    const char *ext[] = {".c", ".h", ".so"};
    for (int i = 0; i < 3; i++)
        snprintf(build_paths[i], sizeof build_paths[i], "%s/%s%s", c->dir, c->name, ext[i]);
    snprintf(build_paths[3], sizeof build_paths[3], "%s", c->dir);
    have_build_paths = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaction(cleanup_signals[i], &sa, &previous[i]);
}

static void remove_build_files(void) {
    if (!have_build_paths) return;
    have_build_paths = 0;
    for (int i = 0; i < 3; i++) sigaction(cleanup_signals[i], &previous[i], NULL);
    unlink_build_paths();
}

bool otc_bench_c_build(otc_bench_c *c, const otc_graph *g, const otc_plan *plan, bool train,
                       otc_id loss, const otc_optim_config *optim, const otc_unrolled *tape,
                       int bptt, char *err, size_t err_len) {
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "/tmp/otc-bench-XXXXXX");
    snprintf(c->name, sizeof c->name, "otcbench");
    if (!mkdtemp(c->dir)) {
        snprintf(err, err_len, "cannot create a temporary directory");
        return false;
    }
    track_files(c);
    double t0 = now_ms(), c0 = cpu_ms();
    otc_emit_c_options o = otc_emit_c_defaults();
    o.name = c->name;
    o.train = train;
    o.loss = loss;
    if (optim) o.optim = *optim;
    if (tape) {
        o.bptt = bptt;
        o.step = tape;
    }
    if (otc_emit_c_files(g, &o, c->dir) != OTC_OK) {
        snprintf(err, err_len, "emitting C: %s", otc_last_error());
        remove_build_files();
        return false;
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "cc " OTC_BENCH_CC_FLAGS " -std=c99 -fPIC -shared -o %s/%s.so %s/%s.c -lm", c->dir,
             c->name, c->dir, c->name);
    if (system(cmd) != 0) {
        snprintf(err, err_len, "the C compiler failed: %s", cmd);
        remove_build_files();
        return false;
    }
    c->build_ms = now_ms() - t0;
    c->build_cpu_ms = cpu_ms() - c0;
    char so[160];
    snprintf(so, sizeof so, "%s/%s.so", c->dir, c->name);
    c->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!c->so) {
        snprintf(err, err_len, "dlopen: %s", dlerror());
        remove_build_files();
        return false;
    }
    /* dlsym hands back data pointers; POSIX guarantees they convert to function pointers. */
    *(void **)&c->workspace_bytes = sym(c, "workspace_bytes");
    if (train) {
        *(void **)&c->params_init = sym(c, "params_init");
        *(void **)&c->train_step = sym(c, "train_step");
        *(void **)&c->train_workspace_bytes = sym(c, "train_workspace_bytes");
        /* The params struct: weights, up to two moment arrays and a step count; its exact
         * size is in the header, an upper bound is enough here. */
        size_t floats = plan ? (size_t)plan->param_floats + 64 : 1024;
        c->params_bytes = 3 * floats * sizeof(float) + 64;
        if (!c->params_init || !c->train_step || !c->train_workspace_bytes) {
            snprintf(err, err_len, "the emitted library lacks its training functions");
            otc_bench_c_free(c);
            return false;
        }
    } else {
        *(void **)&c->forward = sym(c, "forward");
        if (!c->forward || !c->workspace_bytes) {
            snprintf(err, err_len, "the emitted library lacks %s_forward", c->name);
            otc_bench_c_free(c);
            return false;
        }
    }
    return true;
}

void otc_bench_c_free(otc_bench_c *c) {
    if (c->so) dlclose(c->so);
    c->so = NULL;
    remove_build_files();
}

static cJSON *shape_json(otc_shape s) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < s.ndim; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(s.dim[i]));
    return a;
}

char *otc_bench_export(const otc_graph *g, otc_id loss, int batch, bool train,
                       const otc_optim_config *optim, const char *figures_json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "otc-bench-graph-1");
    cJSON_AddNumberToObject(root, "batch", batch);
    cJSON_AddStringToObject(root, "mode", train ? "train" : "forward");
    if (optim) {
        cJSON *o = cJSON_AddObjectToObject(root, "optimizer");
        cJSON_AddStringToObject(o, "kind", otc_optim_kind_name(optim->kind));
        cJSON_AddNumberToObject(o, "lr", optim->lr);
        cJSON_AddNumberToObject(o, "momentum", optim->momentum);
        cJSON_AddBoolToObject(o, "nesterov", optim->nesterov);
        cJSON_AddNumberToObject(o, "beta1", optim->beta1);
        cJSON_AddNumberToObject(o, "beta2", optim->beta2);
        cJSON_AddNumberToObject(o, "eps", optim->eps);
        cJSON_AddNumberToObject(o, "weight_decay", optim->weight_decay);
    }
    cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        const otc_node *nd = otc_graph_node(g, id);
        cJSON *n = cJSON_CreateObject();
        cJSON_AddNumberToObject(n, "id", id);
        cJSON_AddStringToObject(n, "op", otc_op_get(nd->op) ? otc_op_get(nd->op)->name : "?");
        if (nd->name) cJSON_AddStringToObject(n, "name", nd->name);
        cJSON_AddItemToObject(n, "shape", shape_json(nd->shape));
        cJSON *in = cJSON_AddArrayToObject(n, "inputs");
        for (int i = 0; i < nd->n_inputs; i++)
            cJSON_AddItemToArray(in, cJSON_CreateNumber(nd->inputs[i]));
        switch (nd->op) {
        case OTC_OP_PARAMETER: {
            cJSON_AddBoolToObject(n, "trainable", nd->trainable);
            cJSON *v = cJSON_AddArrayToObject(n, "value");
            for (size_t i = 0; nd->value && i < nd->value->size; i++)
                cJSON_AddItemToArray(v, cJSON_CreateNumber(nd->value->data[i]));
            break;
        }
        case OTC_OP_NEURON: {
            cJSON *cols = cJSON_AddArrayToObject(n, "cols");
            for (int i = 0; i < nd->n_inputs - 2; i++)
                cJSON_AddItemToArray(cols, cJSON_CreateNumber(nd->cols[i]));
            cJSON_AddStringToObject(n, "act", otc_act_get((otc_act)nd->act)->name);
            cJSON_AddNumberToObject(n, "scale", nd->scale);
            cJSON_AddNumberToObject(n, "alpha", nd->alpha);
            break;
        }
        case OTC_OP_SCALE:
            cJSON_AddNumberToObject(n, "scale", nd->scale);
            break;
        case OTC_OP_CONV2D:
        case OTC_OP_MAXPOOL2D:
        case OTC_OP_AVGPOOL2D: {
            /* as the model file stores them: [h, w] pairs and the groups */
            const otc_window *w = &nd->win;
            const int pairs[4][2] = {{w->kernel_h, w->kernel_w},
                                     {w->stride_h, w->stride_w},
                                     {w->pad_h, w->pad_w},
                                     {w->dilation_h, w->dilation_w}};
            static const char *const keys[4] = {"kernel", "stride", "padding", "dilation"};
            for (int k = 0; k < 4; k++)
                cJSON_AddItemToObject(n, keys[k], cJSON_CreateIntArray(pairs[k], 2));
            cJSON_AddNumberToObject(n, "groups", w->groups);
            break;
        }
        case OTC_OP_CONCAT:
        case OTC_OP_SLICE:
        case OTC_OP_SELECT:
            cJSON_AddNumberToObject(n, "axis", nd->axis);
            cJSON_AddNumberToObject(n, "start", nd->start);
            cJSON_AddNumberToObject(n, "len", nd->len);
            break;
        default:
            if (otc_op_get(nd->op) && otc_op_get(nd->op)->act >= 0)
                cJSON_AddNumberToObject(n, "alpha", nd->alpha);
            break;
        }
        cJSON_AddItemToArray(nodes, n);
    }
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    for (int i = 0; i < otc_graph_input_count(g); i++)
        cJSON_AddItemToArray(ins, cJSON_CreateNumber(otc_graph_input(g, i)));
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (int i = 0; i < otc_graph_output_count(g); i++)
        cJSON_AddItemToArray(outs, cJSON_CreateNumber(otc_graph_output(g, i)));
    if (loss >= 0)
        cJSON_AddNumberToObject(root, "loss", loss);
    else
        cJSON_AddNullToObject(root, "loss");
    if (figures_json) {
        cJSON *f = cJSON_Parse(figures_json);
        if (f) cJSON_AddItemToObject(root, "otc", f);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

void otc_bench_count_units(const otc_graph *g, long long *neurons, long long *connections) {
    long long n = 0, c = 0;
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op == OTC_OP_NEURON) {
            n++;
            c += nd->n_inputs - 2;
        } else if (nd->op == OTC_OP_MATMUL) {
            const otc_node *w = otc_graph_node(g, nd->inputs[1]);
            if (w->op != OTC_OP_PARAMETER || w->shape.ndim != 2) continue;
            n += w->shape.dim[1];
            c += (long long)w->shape.dim[0] * w->shape.dim[1];
        } else if (nd->op == OTC_OP_CONV2D) {
            /* per sample: out channels x OH x OW neurons, each reading C/groups x KH x KW */
            const otc_node *w = otc_graph_node(g, nd->inputs[1]);
            long long outs = (long long)otc_shape_size(nd->shape); /* the batch not counted */
            n += outs;
            c += outs * (long long)(otc_shape_size(w->shape) / (size_t)w->shape.dim[0]);
        }
    }
    *neurons = n;
    *connections = c;
}
