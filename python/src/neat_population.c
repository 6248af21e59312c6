/* _otc.Population: otc's NEAT population stepped one generation at a time, each generation's
 * new genomes scored by a Python callable (the remote-evaluation hook of otc/neat.h), the
 * GIL released while otc speciates and reproduces. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "otc/file.h"
#include "pyotc.h"

typedef struct {
    PyObject_HEAD otc_neat_population *p;
    PyObject *config;              /* the NeatConfig it was made with */
    PyTypeObject *gtype;           /* genomes are made as this (a Genome subclass) */
    long next_key;                 /* neat-python's genome keys: 1, 2, ... */
    PyObject *current;             /* list: the wrapper of each genome otc holds, index-aligned */
    otc_neat_task *task;           /* step_task's built-in task (made on its first call), or NULL */
    otc_neat_evaluator *evaluator; /* its flat programs and threads, kept across generations */
    bool busy;                     /* pyotc_enter */
} pyotc_population;

/* The task a Python-scored run names in its checkpoints; its evaluate is never called (the
 * remote hook scores every genome). */
static otc_status no_evaluate(const otc_neat_task *task, const otc_neat_config *c,
                              otc_neat_genome *g, uint64_t seed, otc_neat_eval *out) {
    return otc_fail(OTC_ERR_STATE, "python task: genomes are scored by the fitness function");
}

static otc_neat_task python_task(const otc_neat_config *c) {
    return (otc_neat_task){.name = "python",
                           .n_inputs = c->num_inputs,
                           .n_outputs = c->num_outputs,
                           .evaluate = no_evaluate};
}

typedef struct {
    pyotc_population *self;
    PyObject *fn;
    PyObject *exc_type, *exc_value, *exc_tb; /* what the callback raised, for the caller */
} remote_ctx;

/* Whether two connection gene arrays are the same genes (field by field: a gene's padding
 * bytes are not set). */
static bool same_conns(const otc_neat_conn *a, const otc_neat_conn *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i].innov != b[i].innov || a[i].in != b[i].in || a[i].out != b[i].out ||
            a[i].weight != b[i].weight || a[i].enabled != b[i].enabled)
            return false;
    return true;
}

/* Whether wrapper w shows otc genome g: the same genes (reproduction copies an elite into
 * another genome) and, when g kept its evaluation, the same fitness. A node gene is all
 * 4-byte fields, compared as bytes. */
static bool shows(const pyotc_genome *w, const otc_neat_genome *g) {
    const otc_neat_genome *c = w->g;
    return (!g->evaluated ||
            (w->fitness && w->fitness != Py_None && PyFloat_AsDouble(w->fitness) == g->fitness)) &&
           c->n_nodes == g->n_nodes && c->n_conns == g->n_conns &&
           (!g->n_nodes || !memcmp(c->nodes, g->nodes, sizeof *g->nodes * (size_t)g->n_nodes)) &&
           same_conns(c->conns, g->conns, g->n_conns);
}

/* A hash of g's genes (its sizes, innovations, weights and biases) for finding elites. */
static size_t genes_hash(const otc_neat_genome *g) {
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)g->n_nodes << 32) ^ (uint64_t)g->n_conns;
    for (int i = 0; i < g->n_conns; i++) {
        uint32_t bits;
        memcpy(&bits, &g->conns[i].weight, sizeof bits);
        h = (h ^ bits ^ ((uint64_t)(uint32_t)g->conns[i].innov << 32)) * 0x100000001b3ull;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        uint32_t bits;
        memcpy(&bits, &g->nodes[i].bias, sizeof bits);
        h = (h ^ bits ^ ((uint64_t)(uint32_t)g->nodes[i].id << 32)) * 0x100000001b3ull;
    }
    return (size_t)(h ^ (h >> 29));
}

/* self->current for the generation otc holds now, made once per generation (the fitness
 * function, genomes() and the reporters all see these objects). An elite (reproduction copied
 * it into another genome; neat-python's rules evaluate it again) keeps the wrapper, so the key,
 * of the genome it copies, as in neat-python; every other genome is new and gets the next key.
 * Elites come first in their species' block, so they claim their wrapper before a child that
 * happens to have the same genes. */
static int sync_generation(pyotc_population *self) {
    int n = otc_neat_population_size(self->p);
    PyObject *prev = self->current, *list = PyList_New(n);
    int np = prev ? (int)PyList_GET_SIZE(prev) : 0, size = 1;
    while (size < 2 * np) size *= 2;
    /* The previous generation's wrappers by the hash of their genes: slot -1 empty, else
     * k + 1 for a wrapper taken (k is its index), -(k + 2) for one still free. */
    int *slot = np ? malloc(sizeof *slot * (size_t)size) : NULL;
    if (!list || (np && !slot)) {
        Py_XDECREF(list);
        free(slot);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < size && np; i++) slot[i] = -1;
    for (int k = 0; k < np; k++) {
        size_t h = genes_hash(((pyotc_genome *)PyList_GET_ITEM(prev, k))->g) & (size_t)(size - 1);
        while (slot[h] != -1) h = (h + 1) & (size_t)(size - 1);
        slot[h] = -(k + 2);
    }
    const otc_neat_config *c = &((pyotc_config *)self->config)->c;
    for (int i = 0; i < n; i++) {
        const otc_neat_genome *g = otc_neat_population_genome(self->p, i);
        PyObject *w = NULL;
        for (size_t h = np ? genes_hash(g) & (size_t)(size - 1) : 0; np && slot[h] != -1 && !w;
             h = (h + 1) & (size_t)(size - 1)) {
            int k = -slot[h] - 2;
            if (slot[h] < -1 && shows((pyotc_genome *)PyList_GET_ITEM(prev, k), g)) {
                slot[h] = k + 1;
                w = Py_NewRef(PyList_GET_ITEM(prev, k));
            }
        }
        if (!w && !(w = pyotc_genome_wrap(self->gtype, g, c, self->next_key++))) {
            Py_DECREF(list);
            free(slot);
            return -1;
        }
        PyList_SET_ITEM(list, i, w);
    }
    free(slot);
    Py_XSETREF(self->current, list);
    return 0;
}

/* The wrapper (borrowed) of batch genome i: the batch is the generation's unevaluated
 * genomes, by their index in it. NULL when it is not in the population. */
static PyObject *wrapper_of(pyotc_population *self, const otc_neat_batch *b, int i) {
    PyObject *cur = self->current;
    int at = b->index ? b->index[i] : -1;
    if (at < 0 || at >= PyList_GET_SIZE(cur) ||
        otc_neat_population_genome(self->p, at) != b->genomes[i]) {
        for (at = 0;
             at < PyList_GET_SIZE(cur) && otc_neat_population_genome(self->p, at) != b->genomes[i];
             at++) {
        }
    }
    return at < PyList_GET_SIZE(cur) ? PyList_GET_ITEM(cur, at) : NULL;
}

/* The batch's genomes handed to the Python callable as genome objects; their .fitness read
 * back. Called by otc_neat_step on the thread that released the GIL. */
static otc_status remote_evaluate(void *vctx, const otc_neat_task *task, const otc_neat_config *c,
                                  const otc_neat_batch *b, int threads) {
    remote_ctx *ctx = vctx;
    PyGILState_STATE gs = PyGILState_Ensure();
    otc_status s = OTC_OK;
    PyObject *list = PyList_New(b->n), *pairs = PyList_New(b->n), *r = NULL;
    for (int i = 0; list && pairs && i < b->n; i++) {
        PyObject *w = wrapper_of(ctx->self, b, i);
        PyObject *t = w ? PyTuple_New(2) : NULL;
        PyObject *k = t ? PyLong_FromLong(((pyotc_genome *)w)->key) : NULL;
        if (!k) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError,
                                "a genome to evaluate is not in the population");
            Py_XDECREF(t);
            Py_CLEAR(list);
            break;
        }
        PyTuple_SET_ITEM(t, 0, k);
        PyTuple_SET_ITEM(t, 1, Py_NewRef(w));
        PyList_SET_ITEM(list, i, Py_NewRef(w));
        PyList_SET_ITEM(pairs, i, t);
    }
    if (list && pairs) r = PyObject_CallOneArg(ctx->fn, pairs);
    for (int i = 0; r && i < b->n; i++) {
        pyotc_genome *w = (pyotc_genome *)PyList_GET_ITEM(list, i);
        double f = w->fitness && w->fitness != Py_None ? PyFloat_AsDouble(w->fitness) : NAN;
        if (!isfinite(f)) {
            PyErr_Format(PyExc_ValueError,
                         "genome %ld: the fitness function left fitness %S (a finite number "
                         "is needed)",
                         w->key, w->fitness ? w->fitness : Py_None);
            Py_CLEAR(r);
            break;
        }
        b->genomes[i]->fitness = w->g->fitness = f; /* the wrapper's copy too (to_json) */
        b->genomes[i]->evaluated = w->g->evaluated = true;
        b->solved[i] = false; /* otc_neat_step applies the config's fitness criterion */
    }
    if (!r) {
        PyErr_Fetch(&ctx->exc_type, &ctx->exc_value, &ctx->exc_tb);
        s = otc_fail(OTC_ERR_STATE, "the fitness function failed");
    }
    Py_XDECREF(r);
    Py_XDECREF(list);
    Py_XDECREF(pairs);
    PyGILState_Release(gs);
    return s;
}

/* step_task's evaluation: the batch scored by otc's task in C threads (as a generation
 * without the hook), then each score, flag and trained weight copied into its genome object,
 * so Python sees the generation as a fitness function would have left it. */
typedef struct {
    pyotc_population *self;
    otc_neat_evaluator *e;
} task_ctx;

static otc_status task_evaluate(void *vctx, const otc_neat_task *task, const otc_neat_config *c,
                                const otc_neat_batch *b, int threads) {
    task_ctx *ctx = vctx;
    otc_status s = otc_neat_evaluate_batch(ctx->e, task, c, b, threads);
    if (s != OTC_OK) return s;
    PyGILState_STATE gs = PyGILState_Ensure();
    for (int i = 0; i < b->n && s == OTC_OK; i++) {
        pyotc_genome *w = (pyotc_genome *)wrapper_of(ctx->self, b, i);
        const otc_neat_genome *g = b->genomes[i];
        PyObject *f = w ? PyFloat_FromDouble(g->fitness) : NULL;
        if (!f || w->g->n_nodes != g->n_nodes || w->g->n_conns != g->n_conns) {
            Py_XDECREF(f);
            PyErr_Clear();
            s = otc_fail(OTC_ERR_STATE, "an evaluated genome is not in the population");
            break;
        }
        Py_XSETREF(w->fitness, f);
        w->g->fitness = g->fitness;
        w->g->evaluated = g->evaluated;
        for (int k = 0; k < g->n_nodes; k++) w->g->nodes[k] = g->nodes[k];
        for (int k = 0; k < g->n_conns; k++) w->g->conns[k] = g->conns[k];
    }
    PyGILState_Release(gs);
    return s;
}

static pyotc_population *population_alloc(PyTypeObject *type, PyObject *config, PyObject *gtype) {
    if (!PyObject_TypeCheck(config, &pyotc_config_type)) {
        PyErr_SetString(PyExc_TypeError, "config: expected an otc._otc.NeatConfig");
        return NULL;
    }
    if (!PyType_Check(gtype) || !PyType_IsSubtype((PyTypeObject *)gtype, &pyotc_genome_type)) {
        PyErr_SetString(PyExc_TypeError, "genome_type: expected a subclass of otc._otc.Genome");
        return NULL;
    }
    pyotc_population *self = (pyotc_population *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->config = Py_NewRef(config);
    self->gtype = (PyTypeObject *)Py_NewRef(gtype);
    self->next_key = 1;
    return self;
}

/* Population(config, seed, genome_type): a fresh population. */
static PyObject *population_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"config", "seed", "genome_type", NULL};
    PyObject *config, *gtype = (PyObject *)&pyotc_genome_type;
    unsigned long long seed = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|KO:Population", kwlist, &config, &seed, &gtype))
        return NULL;
    pyotc_population *self = population_alloc(type, config, gtype);
    if (!self) return NULL;
    otc_status s;
    const otc_neat_config *c = &((pyotc_config *)config)->c;
    Py_BEGIN_ALLOW_THREADS s = otc_neat_population_new(c, seed, &self->p);
    Py_END_ALLOW_THREADS if (s != OTC_OK) {
        Py_DECREF(self);
        return pyotc_fail();
    }
    if (sync_generation(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* Population._from_checkpoint(config, text, name, genome_type, next_key): a run continued. */
static PyObject *population_from_checkpoint(PyObject *cls, PyObject *args) {
    PyObject *config, *gtype;
    const char *text, *name;
    Py_ssize_t len;
    long next_key;
    if (!PyArg_ParseTuple(args, "Oy#sOl:_from_checkpoint", &config, &text, &len, &name, &gtype,
                          &next_key))
        return NULL;
    pyotc_population *self = population_alloc((PyTypeObject *)cls, config, gtype);
    if (!self) return NULL;
    self->next_key = next_key > 0 ? next_key : 1;
    otc_status s;
    const otc_neat_config *c = &((pyotc_config *)config)->c;
    Py_BEGIN_ALLOW_THREADS s =
        otc_neat_checkpoint_parse(text, (size_t)len, name, c, "python", &self->p);
    Py_END_ALLOW_THREADS if (s != OTC_OK) {
        Py_DECREF(self);
        return pyotc_fail();
    }
    if (sync_generation(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void population_dealloc(pyotc_population *self) {
    otc_neat_population_free(self->p);
    otc_neat_task_free(self->task);
    otc_neat_evaluator_free(self->evaluator);
    Py_XDECREF(self->config);
    Py_XDECREF(self->gtype);
    Py_XDECREF(self->current);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* step(fn): one generation; fn(list of (key, genome) pairs) sets each genome's fitness. Returns
 * "running", "solved" (the config's fitness criterion met) or "extinct". */
static PyObject *population_step_impl(pyotc_population *self, PyObject *args) {
    PyObject *fn;
    if (!PyArg_ParseTuple(args, "O:step", &fn)) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "fitness_function: not callable");
        return NULL;
    }
    if (otc_neat_extinct(self->p) || otc_neat_solved(self->p)) {
        PyErr_SetString(PyExc_RuntimeError, "the run has already stopped");
        return NULL;
    }
    remote_ctx ctx = {.self = self, .fn = fn};
    otc_neat_remote remote = {remote_evaluate, &ctx};
    otc_neat_step_options o = {.threads = 1, .remote = &remote};
    otc_neat_task task = python_task(&((pyotc_config *)self->config)->c);
    int gen = otc_neat_generation(self->p);
    otc_status s;
    Py_BEGIN_ALLOW_THREADS s = otc_neat_step(self->p, &task, &o, NULL);
    Py_END_ALLOW_THREADS if (ctx.exc_type) {
        PyErr_Restore(ctx.exc_type, ctx.exc_value, ctx.exc_tb);
        return NULL;
    }
    if (s != OTC_OK) return pyotc_fail();
    if (otc_neat_generation(self->p) != gen && sync_generation(self) < 0) return NULL;
    if (otc_neat_generation(self->p) == gen) /* no reproduction: the run stopped */
        return PyUnicode_FromString(otc_neat_extinct(self->p) ? "extinct" : "solved");
    return PyUnicode_FromString(otc_neat_extinct(self->p) ? "extinct" : "running");
}
PYOTC_GUARD2(population_step, pyotc_population, "Population")

/* step_task(name, threads): one generation scored by one of otc's built-in tasks (as
 * `otc evolve --task NAME`), in C on `threads` threads, the GIL released
 * throughout. Returns what step() does. */
static PyObject *population_step_task_impl(pyotc_population *self, PyObject *args) {
    const char *name;
    int threads;
    if (!PyArg_ParseTuple(args, "si:step_task", &name, &threads)) return NULL;
    if (threads < 1 || threads > OTC_NEAT_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads: %d is not in 1..%d", threads,
                     OTC_NEAT_MAX_THREADS);
        return NULL;
    }
    if (otc_neat_extinct(self->p) || otc_neat_solved(self->p)) {
        PyErr_SetString(PyExc_RuntimeError, "the run has already stopped");
        return NULL;
    }
    if (self->task && strcmp(self->task->name, name)) {
        PyErr_Format(PyExc_ValueError, "task: this population runs '%s', not '%s'",
                     self->task->name, name);
        return NULL;
    }
    const otc_neat_config *c = &((pyotc_config *)self->config)->c;
    if (!self->task && otc_neat_task_create(name, c, &self->task) != OTC_OK) return pyotc_fail();
    if (!self->evaluator && !(self->evaluator = otc_neat_evaluator_new())) return PyErr_NoMemory();
    task_ctx ctx = {self, self->evaluator};
    otc_neat_remote remote = {task_evaluate, &ctx};
    otc_neat_step_options o = {.threads = threads, .remote = &remote};
    int gen = otc_neat_generation(self->p);
    otc_status s;
    Py_BEGIN_ALLOW_THREADS s = otc_neat_step(self->p, self->task, &o, NULL);
    Py_END_ALLOW_THREADS if (s != OTC_OK) return pyotc_fail();
    if (otc_neat_generation(self->p) != gen && sync_generation(self) < 0) return NULL;
    if (otc_neat_generation(self->p) == gen)
        return PyUnicode_FromString(otc_neat_extinct(self->p) ? "extinct" : "solved");
    return PyUnicode_FromString(otc_neat_extinct(self->p) ? "extinct" : "running");
}
PYOTC_GUARD2(population_step_task, pyotc_population, "Population")

/* genomes(): the current generation's genomes (the same objects every call until the next
 * step), with their keys and fitness. */
static PyObject *population_genomes_impl(pyotc_population *self, PyObject *noargs) {
    return PyList_GetSlice(self->current, 0, PyList_GET_SIZE(self->current));
}
PYOTC_GUARD2(population_genomes, pyotc_population, "Population")

/* species(): (id, created, last_improved, fitness, [member indices into genomes()]). */
static PyObject *population_species_impl(pyotc_population *self, PyObject *noargs) {
    int n = otc_neat_population_species_count(self->p);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        const otc_neat_species *sp = otc_neat_population_species(self->p, i);
        PyObject *members = PyList_New(sp->n_members);
        for (int k = 0; members && k < sp->n_members; k++) {
            PyObject *v = PyLong_FromLong(sp->members[k]);
            if (!v)
                Py_CLEAR(members);
            else
                PyList_SET_ITEM(members, k, v);
        }
        PyObject *t = members ? Py_BuildValue("(iiidN)", sp->id, sp->created, sp->last_improved,
                                              sp->fitness, members)
                              : NULL;
        if (!t)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, t);
    }
    return list;
}
PYOTC_GUARD2(population_species, pyotc_population, "Population")

/* last_stats(): the last generation's statistics as a dict (None before the first). */
static PyObject *population_last_stats_impl(pyotc_population *self, PyObject *noargs) {
    int n = otc_neat_stats_count(self->p);
    if (n == 0) Py_RETURN_NONE;
    const otc_neat_gen_stats *st = otc_neat_stats(self->p, n - 1);
    return Py_BuildValue("{s:i,s:l,s:d,s:d,s:d,s:i,s:d,s:d,s:d,s:i,s:i}", "generation",
                         st->generation, "evaluations", st->evaluations, "best_fitness",
                         st->best_fitness, "mean_fitness", st->mean_fitness, "stdev_fitness",
                         st->stdev_fitness, "n_species", st->n_species, "threshold", st->threshold,
                         "mean_hidden", st->mean_hidden, "mean_connections", st->mean_connections,
                         "champion_hidden", st->champion_hidden, "champion_connections",
                         st->champion_connections);
}
PYOTC_GUARD2(population_last_stats, pyotc_population, "Population")

static PyObject *population_save_checkpoint_impl(pyotc_population *self, PyObject *args) {
    PyObject *patho;
    if (!PyArg_ParseTuple(args, "O&:save_checkpoint", PyUnicode_FSConverter, &patho)) return NULL;
    otc_status s = otc_neat_checkpoint_save(self->p, PyBytes_AS_STRING(patho));
    Py_DECREF(patho);
    if (s != OTC_OK) return pyotc_fail();
    Py_RETURN_NONE;
}
PYOTC_GUARD2(population_save_checkpoint, pyotc_population, "Population")

static PyObject *population_get_generation(pyotc_population *self, void *closure) {
    return PyLong_FromLong(otc_neat_generation(self->p));
}

static PyObject *population_get_next_key(pyotc_population *self, void *closure) {
    return PyLong_FromLong(self->next_key);
}

static PyMethodDef population_methods[] = {
    {"_from_checkpoint", (PyCFunction)population_from_checkpoint, METH_VARARGS | METH_CLASS,
     "a population from otc checkpoint JSON"},
    {"step", (PyCFunction)population_step, METH_VARARGS, "step(fn): one generation"},
    {"step_task", (PyCFunction)population_step_task, METH_VARARGS,
     "step_task(name, threads): one generation scored by an otc task in C threads"},
    {"genomes", (PyCFunction)population_genomes, METH_NOARGS, "the current genomes"},
    {"species", (PyCFunction)population_species, METH_NOARGS, "the current species"},
    {"last_stats", (PyCFunction)population_last_stats, METH_NOARGS, "last generation's stats"},
    {"save_checkpoint", (PyCFunction)population_save_checkpoint, METH_VARARGS,
     "save_checkpoint(path): otc's checkpoint JSON, written atomically"},
    {NULL}};

static PyGetSetDef population_getset[] = {
    {"generation", (getter)population_get_generation, NULL, "generation about to be evaluated",
     NULL},
    {"next_key", (getter)population_get_next_key, NULL, "the next genome key", NULL},
    {NULL}};

static PyTypeObject population_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "otc._otc.Population",
    .tp_basicsize = sizeof(pyotc_population),
    .tp_dealloc = (destructor)population_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Population(config, seed=1, genome_type=Genome): otc's NEAT population",
    .tp_new = population_new,
    .tp_methods = population_methods,
    .tp_getset = population_getset,
};

int pyotc_add_population(PyObject *m) {
    if (PyType_Ready(&population_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "Population", (PyObject *)&population_type);
}
