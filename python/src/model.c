/* otc.Model: a graph loaded from .otm (or imported), run on numpy arrays, trained with the
 * runtime's executor and optimisers, emitted as C or run under the LLVM JIT. */
#include <stdlib.h>
#include <string.h>

#include "otc/file.h"
#include "otc/jit.h"
#include "otc/neat_python.h"
#include "otc/onnx.h"
#include "otc/otc.h"
#include "otc/render_c.h"
#include "pyotc.h"

typedef struct {
    PyObject_HEAD otc_graph *g;
    otc_executor *ex; /* for run(): the interpreter, or the JIT after jit() */
    bool jit;
    bool busy; /* pyotc_enter */
} pyotc_model;

static PyTypeObject model_type;

static void model_dealloc(pyotc_model *self) {
    otc_exec_free(self->ex);
    otc_graph_free(self->g);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A new Model owning g (freed on failure). */
static PyObject *model_wrap(otc_graph *g) {
    if (otc_graph_input_count(g) < 1 || otc_graph_output_count(g) < 1) {
        otc_graph_free(g);
        PyErr_SetString(PyExc_ValueError, "the model has no input or no output");
        return NULL;
    }
    pyotc_model *m = (pyotc_model *)model_type.tp_alloc(&model_type, 0);
    if (!m) {
        otc_graph_free(g);
        return NULL;
    }
    m->g = g;
    return (PyObject *)m;
}

static PyObject *model_load(PyObject *cls, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s:load", &path)) return NULL;
    otc_graph *g = NULL;
    otc_status s;
    Py_BEGIN_ALLOW_THREADS s = otc_model_load(path, &g);
    Py_END_ALLOW_THREADS if (s != OTC_OK) return pyotc_fail();
    return model_wrap(g);
}

static PyObject *model_import_neat_python(PyObject *cls, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "advance_time", "time_step", NULL};
    const char *path;
    double advance = 0, step = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|dd:import_neat_python", kwlist, &path, &advance,
                                     &step))
        return NULL;
    if (!(advance >= 0) || !(step >= 0)) {
        PyErr_SetString(PyExc_ValueError, "advance_time and time_step must be positive");
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    if (otc_read_text_file(path, OTC_MAX_NETWORK_BYTES, &text, &len) != OTC_OK) return pyotc_fail();
    otc_graph *g = NULL;
    otc_neat_python_options o = {.advance_time = advance, .time_step = step};
    otc_status s = otc_neat_python_import(text, len, path, &o, &g);
    free(text);
    if (s != OTC_OK) return pyotc_fail();
    return model_wrap(g);
}

static PyObject *model_from_genome(PyObject *cls, PyObject *args) {
    PyObject *genome, *config;
    if (!PyArg_ParseTuple(args, "O!O:from_genome", &pyotc_genome_type, &genome, &config))
        return NULL;
    /* otc.neat.Config keeps its parsed config as ._c */
    PyObject *inner = PyObject_TypeCheck(config, &pyotc_config_type)
                          ? Py_NewRef(config)
                          : PyObject_GetAttrString(config, "_c");
    if (!inner || !PyObject_TypeCheck(inner, &pyotc_config_type)) {
        Py_XDECREF(inner);
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "config: expected an otc.neat.Config");
        return NULL;
    }
    otc_neat_config cfg = ((pyotc_config *)inner)->c;
    Py_DECREF(inner);
    const otc_neat_config *c = &cfg;
    otc_neat_phenotype *ph = NULL;
    if (otc_neat_phenotype_build(((pyotc_genome *)genome)->g, c, &ph) != OTC_OK)
        return pyotc_fail();
    otc_graph *g = ph->graph;
    ph->graph = NULL; /* the Model owns it now */
    otc_neat_phenotype_free(ph);
    char *json = otc_neat_genome_to_json(((pyotc_genome *)genome)->g);
    otc_status s = json ? otc_graph_meta_set(g, "genome", json)
                        : otc_fail(OTC_ERR_NOMEM, "out of memory for the genome's JSON");
    free(json);
    if (s != OTC_OK) {
        otc_graph_free(g);
        return pyotc_fail();
    }
    return model_wrap(g);
}

static PyObject *model_save_impl(pyotc_model *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s:save", &path)) return NULL;
    if (self->ex && otc_exec_sync_params(self->ex) != OTC_OK) return pyotc_fail();
    if (otc_model_save(self->g, path) != OTC_OK) return pyotc_fail();
    Py_RETURN_NONE;
}
PYOTC_GUARD2(model_save, pyotc_model, "Model")

/* export_onnx(path): the model as an ONNX file (opset 13, as `otc export`), written atomically;
 * a graph ONNX cannot express raises otc.Error naming the node. */
static PyObject *model_export_onnx_impl(pyotc_model *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s:export_onnx", &path)) return NULL;
    if (self->ex && otc_exec_sync_params(self->ex) != OTC_OK) return pyotc_fail();
    void *data = NULL;
    size_t len = 0;
    otc_status s = otc_onnx_export(self->g, &data, &len);
    if (s == OTC_OK) s = otc_write_file_atomic(path, data, len);
    free(data);
    if (s != OTC_OK) return pyotc_fail();
    Py_RETURN_NONE;
}
PYOTC_GUARD2(model_export_onnx, pyotc_model, "Model")

/* Floats per sample of the first Input (its shape less the batch dim). */
static int input_width(const otc_graph *g) {
    return (int)otc_shape_size(otc_graph_node(g, otc_graph_input(g, 0))->shape);
}

static otc_status ensure_executor(pyotc_model *self) {
    if (self->ex) return OTC_OK;
    if (self->jit) {
        otc_jit_options o = otc_jit_defaults();
        o.inference = true;
        self->ex = otc_jit_executor_new(self->g, &o);
    } else {
        self->ex = otc_interpreter_new(self->g, &(otc_exec_options){.inference = true});
    }
    return self->ex ? OTC_OK : OTC_ERR_STATE;
}

/* One output's values (rows of `per` floats, in d's row order) as numpy: [steps, ...] for one
 * sequence, [sequences, steps, ...] for a batch, a list of [steps_i, ...] for a list. */
static PyObject *sequence_output(const otc_seq_dataset *d, pyotc_seq_form form, const float *v,
                                 const otc_shape *sh) {
    npy_intp dims[OTC_MAX_DIMS + 2];
    int nd = 0, lead = form == PYOTC_SEQ_BATCH ? 2 : 1;
    if (form == PYOTC_SEQ_BATCH) dims[nd++] = d->n;
    dims[nd++] = d->len[0];
    for (int k = 1; k < sh->ndim; k++) dims[nd++] = sh->dim[k];
    if (sh->ndim <= 1) dims[nd++] = 1;
    size_t per = 1;
    for (int k = lead; k < nd; k++) per *= (size_t)dims[k];
    if (form != PYOTC_SEQ_LIST) {
        PyObject *a = PyArray_SimpleNew(nd, dims, NPY_FLOAT32);
        if (a) memcpy(PyArray_DATA((PyArrayObject *)a), v, sizeof *v * per * (size_t)d->data->rows);
        return a;
    }
    PyObject *list = PyList_New(d->n);
    for (int i = 0; list && i < d->n; i++) {
        dims[0] = d->len[i];
        PyObject *a = PyArray_SimpleNew(nd, dims, NPY_FLOAT32);
        if (!a) {
            Py_CLEAR(list);
            break;
        }
        memcpy(PyArray_DATA((PyArrayObject *)a), v + (size_t)d->start[i] * per,
               sizeof *v * per * (size_t)d->len[i]);
        PyList_SET_ITEM(list, i, a);
    }
    return list;
}

/* run(X) on a recurrent model: X one sequence [steps, inputs], a batch [sequences, steps,
 * inputs] or a list of sequences, each run from a reset state, as `otc run --sequence`. */
static PyObject *run_sequences(pyotc_model *self, PyObject *xo) {
    pyotc_seq_form form;
    otc_seq_dataset *d = pyotc_sequences(xo, NULL, input_width(self->g), 0, &form);
    if (!d) return NULL;
    int n_out = otc_graph_output_count(self->g);
    otc_id *outs = malloc(sizeof *outs * (size_t)n_out);
    float **values = calloc((size_t)n_out, sizeof *values);
    int *per = calloc((size_t)n_out, sizeof *per);
    PyObject *r = NULL;
    otc_status s =
        outs && values && per ? ensure_executor(self) : otc_fail(OTC_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n_out && s == OTC_OK; k++) outs[k] = otc_graph_output(self->g, k);
    if (s == OTC_OK) {
        Py_BEGIN_ALLOW_THREADS s =
            pyotc_run_sequences(self->ex, otc_graph_input(self->g, 0), outs, n_out, d, values, per);
        Py_END_ALLOW_THREADS
    }
    if (s != OTC_OK) {
        pyotc_fail();
    } else if ((r = PyTuple_New(n_out))) {
        for (int k = 0; k < n_out; k++) {
            PyObject *a =
                sequence_output(d, form, values[k], &otc_graph_node(self->g, outs[k])->shape);
            if (!a) {
                Py_CLEAR(r);
                break;
            }
            PyTuple_SET_ITEM(r, k, a);
        }
    }
    for (int k = 0; values && k < n_out; k++) free(values[k]);
    free(values);
    free(per);
    free(outs);
    otc_seq_dataset_free(d);
    if (r && n_out == 1) {
        PyObject *one = Py_NewRef(PyTuple_GET_ITEM(r, 0));
        Py_DECREF(r);
        return one;
    }
    return r;
}

/* run(X): X [batch, inputs] -> one array per output [batch, ...], a tuple when the model has
 * several outputs; a recurrent model takes sequences (run_sequences). */
static PyObject *model_run_impl(pyotc_model *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"X", NULL};
    PyObject *xo;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:run", kwlist, &xo)) return NULL;
    if (otc_graph_input_count(self->g) != 1) {
        PyErr_SetString(PyExc_ValueError, "run() takes models with exactly one input");
        return NULL;
    }
    if (otc_graph_is_recurrent(self->g)) return run_sequences(self, xo);
    PyArrayObject *x = pyotc_float_array(xo, "X", 2);
    if (!x) return NULL;
    int width = input_width(self->g);
    npy_intp batch = PyArray_DIM(x, 0);
    if (PyArray_DIM(x, 1) != width || batch < 1) {
        PyObject *shape = PyObject_GetAttrString((PyObject *)x, "shape");
        if (shape)
            PyErr_Format(PyExc_ValueError, "X: expected shape [batch, %d] with batch >= 1, got %S",
                         width, shape);
        Py_XDECREF(shape);
        Py_DECREF(x);
        return NULL;
    }
    if (ensure_executor(self) != OTC_OK) {
        Py_DECREF(x);
        return pyotc_fail();
    }
    int n_out = otc_graph_output_count(self->g);
    PyObject *outs = PyTuple_New(n_out);
    if (!outs) {
        Py_DECREF(x);
        return NULL;
    }
    otc_status s;
    Py_BEGIN_ALLOW_THREADS s =
        otc_exec_set_input(self->ex, otc_graph_input(self->g, 0), PyArray_DATA(x), (int)batch);
    if (s == OTC_OK) s = otc_exec_forward(self->ex);
    Py_END_ALLOW_THREADS;
    for (int k = 0; k < n_out && s == OTC_OK; k++) {
        const float *y = NULL;
        otc_shape sh;
        s = otc_exec_value(self->ex, otc_graph_output(self->g, k), &y, &sh);
        if (s != OTC_OK) break;
        npy_intp dims[OTC_MAX_DIMS + 1];
        int nd = 0;
        dims[nd++] = batch;
        for (int d = 1; d < sh.ndim; d++) dims[nd++] = sh.dim[d];
        if (sh.ndim <= 1) dims[nd++] = 1;
        PyObject *a = PyArray_SimpleNew(nd, dims, NPY_FLOAT32);
        if (!a) {
            Py_DECREF(outs);
            Py_DECREF(x);
            return NULL;
        }
        memcpy(PyArray_DATA((PyArrayObject *)a), y, sizeof *y * (size_t)otc_shape_size(sh));
        PyTuple_SET_ITEM(outs, k, a);
    }
    Py_DECREF(x);
    if (s != OTC_OK) {
        Py_DECREF(outs);
        return pyotc_fail();
    }
    if (n_out == 1) {
        PyObject *one = Py_NewRef(PyTuple_GET_ITEM(outs, 0));
        Py_DECREF(outs);
        return one;
    }
    return outs;
}
PYOTC_GUARD3(model_run, pyotc_model, "Model")

typedef struct {
    otc_graph *g;
    otc_executor *ex;
    otc_optimizer *opt;
    otc_id input, target, loss;
    const float *x, *y;
    int rows, width, twidth, batch, epochs;
    uint64_t seed;
    double *losses; /* per epoch */
} train_job;

/* The epochs, without the GIL: minibatches gathered in a shuffled order, one train_step each. */
static otc_status train_loop(train_job *j) {
    int *order = malloc(sizeof *order * (size_t)j->rows);
    float *bx = malloc(sizeof *bx * (size_t)j->batch * (size_t)j->width);
    float *by = malloc(sizeof *by * (size_t)j->batch * (size_t)j->twidth);
    otc_status s =
        order && bx && by ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory for batches");
    otc_rng rng;
    otc_rng_seed(&rng, j->seed);
    for (int e = 0; e < j->epochs && s == OTC_OK; e++) {
        for (int i = 0; i < j->rows; i++) order[i] = i;
        otc_rng_shuffle(&rng, order, j->rows);
        double sum = 0;
        for (int start = 0; start < j->rows && s == OTC_OK; start += j->batch) {
            int b = j->rows - start < j->batch ? j->rows - start : j->batch;
            for (int r = 0; r < b; r++) {
                memcpy(bx + (size_t)r * j->width, j->x + (size_t)order[start + r] * j->width,
                       sizeof *bx * (size_t)j->width);
                memcpy(by + (size_t)r * j->twidth, j->y + (size_t)order[start + r] * j->twidth,
                       sizeof *by * (size_t)j->twidth);
            }
            float lv = 0;
            s = otc_exec_set_input(j->ex, j->input, bx, b);
            if (s == OTC_OK) s = otc_exec_set_input(j->ex, j->target, by, b);
            if (s == OTC_OK) s = otc_exec_train_step(j->ex, j->loss, j->opt, &lv);
            sum += (double)lv * b; /* every loss is a mean over rows */
        }
        j->losses[e] = sum / j->rows;
    }
    free(order);
    free(bx);
    free(by);
    return s;
}

/* The training data: rows X [rows, inputs] and y, or for a recurrent model sequences (d);
 * NULL-free on success, a TypeError/ValueError naming the argument otherwise. */
typedef struct {
    PyArrayObject *x, *y;
    otc_seq_dataset *d;
} train_data;

static int train_data_read(pyotc_model *self, PyObject *xo, PyObject *yo, int width, int twidth,
                           train_data *t) {
    if (otc_graph_is_recurrent(self->g)) {
        pyotc_seq_form form;
        if (!(t->d = pyotc_sequences(xo, yo, width, twidth, &form))) return -1;
        return pyotc_sequences_finite(t->d);
    }
    if (!(t->x = pyotc_float_array(xo, "X", 2)) || !(t->y = pyotc_float_array(yo, "y", 2)))
        return -1;
    if (PyArray_DIM(t->x, 1) != width || PyArray_DIM(t->x, 0) < 1) {
        PyErr_Format(PyExc_ValueError, "X: expected shape [rows, %d] with rows >= 1", width);
        return -1;
    }
    if (PyArray_DIM(t->y, 0) != PyArray_DIM(t->x, 0) || PyArray_DIM(t->y, 1) != twidth) {
        PyErr_Format(PyExc_ValueError, "y: expected shape [%ld, %d]", (long)PyArray_DIM(t->x, 0),
                     twidth);
        return -1;
    }
    return 0;
}

/* train(X, y, epochs=10, lr=None, batch=32, optimizer="adam", loss="mse", seed=1, bptt=None):
 * minibatch training of the first output, as `otc train` does; returns the mean loss of each
 * epoch. A recurrent model trains on sequences through time: batch sequences of one length
 * per step, an update every bptt steps (None: whole sequences). */
static PyObject *model_train_impl(pyotc_model *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"X",         "y",    "epochs", "lr",   "batch",
                             "optimizer", "loss", "seed",   "bptt", NULL};
    PyObject *xo, *yo, *lro = Py_None, *bpo = Py_None;
    int epochs = 10, batch = 32, bptt = 0;
    const char *optname = "adam", *lossname = "mse";
    unsigned long long seed = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|iOissKO:train", kwlist, &xo, &yo, &epochs, &lro,
                                     &batch, &optname, &lossname, &seed, &bpo))
        return NULL;
    bool recurrent = otc_graph_is_recurrent(self->g);
    if (otc_graph_input_count(self->g) != 1) {
        PyErr_SetString(PyExc_ValueError, "train() takes models with exactly one input");
        return NULL;
    }
    if (epochs < 0 || batch < 1) {
        PyErr_SetString(PyExc_ValueError, "epochs must be >= 0 and batch >= 1");
        return NULL;
    }
    if (bpo != Py_None) {
        if (!recurrent) {
            PyErr_SetString(PyExc_ValueError, "bptt: the model is not recurrent (no Delay node)");
            return NULL;
        }
        long v = PyLong_AsLong(bpo);
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (v < 1 || v > OTC_MAX_SEQ_STEPS) {
            PyErr_Format(PyExc_ValueError, "bptt: %ld is not from 1 to %d", v, OTC_MAX_SEQ_STEPS);
            return NULL;
        }
        bptt = (int)v;
    }
    int kind = otc_optim_kind_from_name(optname);
    if (kind < 0) {
        PyErr_Format(PyExc_ValueError, "optimizer: '%s' is not one of sgd, adam, adamw", optname);
        return NULL;
    }
    bool ce = strcmp(lossname, "ce") == 0;
    if (!ce && strcmp(lossname, "mse") != 0) {
        PyErr_Format(PyExc_ValueError, "loss: '%s' is not one of mse, ce", lossname);
        return NULL;
    }
    otc_optim_config oc = otc_optim_defaults((otc_optim_kind)kind);
    if (lro != Py_None) {
        double lr = PyFloat_AsDouble(lro);
        if (lr == -1.0 && PyErr_Occurred()) return NULL;
        if (!(lr > 0)) {
            PyErr_SetString(PyExc_ValueError, "lr: must be > 0");
            return NULL;
        }
        oc.lr = (float)lr;
    }
    otc_id pred = otc_graph_output(self->g, 0);
    int width = input_width(self->g);
    int twidth = ce ? 1 : (int)otc_shape_size(otc_graph_node(self->g, pred)->shape);
    PyObject *result = NULL;
    train_data td = {0};
    if (train_data_read(self, xo, yo, width, twidth, &td) < 0) goto out;
    if (td.d) {
        int longest = otc_seq_max_len(td.d);
        if (bptt > longest) {
            PyErr_Format(PyExc_ValueError,
                         "bptt: %d is longer than the longest sequence (%d steps)", bptt, longest);
            goto out;
        }
        if (!bptt && longest > OTC_MAX_SEQ_STEPS) {
            PyErr_Format(PyExc_ValueError,
                         "X: a sequence of %d steps is more than one pass through time can "
                         "record (%d): give bptt",
                         longest, OTC_MAX_SEQ_STEPS);
            goto out;
        }
        if (!bptt) bptt = longest;
    }
    /* The loss nodes go on the graph for training and come off afterwards, as otc train
     * leaves the saved model as it was. */
    int size = otc_graph_size(self->g);
    train_job j = {.g = self->g,
                   .x = td.x ? PyArray_DATA(td.x) : NULL,
                   .y = td.y ? PyArray_DATA(td.y) : NULL,
                   .rows = td.x ? (int)PyArray_DIM(td.x, 0) : 0,
                   .width = width,
                   .twidth = twidth,
                   .batch = batch,
                   .epochs = epochs,
                   .seed = seed,
                   .input = otc_graph_input(self->g, 0)};
    otc_id logits = pred;
    otc_shape ts = otc_graph_node(self->g, pred)->shape;
    if (ce) {
        ts = otc_shape_2d(OTC_BATCH, 1);
        const otc_node *p = otc_graph_node(self->g, pred);
        if (p->op == OTC_OP_SOFTMAX) logits = p->inputs[0];
    }
    otc_status s = OTC_OK;
    j.target = otc_input(self->g, NULL, ts);
    j.loss = j.target < 0 ? -1
             : ce         ? otc_softmax_ce(self->g, logits, j.target)
                          : otc_mse(self->g, pred, j.target);
    if (j.loss < 0) s = OTC_ERR_SHAPE;
    j.losses = calloc((size_t)epochs + 1, sizeof *j.losses);
    if (s == OTC_OK && !j.losses) s = otc_fail(OTC_ERR_NOMEM, "out of memory");
    /* The executor for run() may hold its own copy of the weights (the JIT): bring them back
     * first, and drop it (it would not see the trained weights). */
    if (s == OTC_OK && self->ex) {
        s = otc_exec_sync_params(self->ex);
        otc_exec_free(self->ex);
        self->ex = NULL;
    }
    if (s == OTC_OK && !(j.ex = otc_interpreter_new(self->g, &(otc_exec_options){0})))
        s = OTC_ERR_STATE;
    if (s == OTC_OK && !(j.opt = otc_optimizer_new(&oc))) s = OTC_ERR_NOMEM;
    pyotc_seq_train st = {.ex = j.ex,
                          .opt = j.opt,
                          .input = j.input,
                          .target = j.target,
                          .loss = j.loss,
                          .d = td.d,
                          .batch = batch,
                          .bptt = bptt,
                          .epochs = epochs,
                          .seed = seed};
    if (s == OTC_OK) {
        Py_BEGIN_ALLOW_THREADS s = td.d ? pyotc_train_sequences(&st, j.losses) : train_loop(&j);
        Py_END_ALLOW_THREADS
    }
    otc_exec_free(j.ex);
    otc_optimizer_free(j.opt);
    if (s != OTC_OK) {
        pyotc_fail();
    } else {
        result = PyList_New(epochs);
        for (int e = 0; result && e < epochs; e++)
            PyList_SET_ITEM(result, e, PyFloat_FromDouble(j.losses[e]));
    }
    free(j.losses);
    if (otc_graph_truncate(self->g, size) != OTC_OK && result) {
        Py_CLEAR(result);
        pyotc_fail();
    }
out:
    Py_XDECREF(td.x);
    Py_XDECREF(td.y);
    otc_seq_dataset_free(td.d);
    return result;
}
PYOTC_GUARD3(model_train, pyotc_model, "Model")

/* compile(emit_c=DIR, name="model"): the standalone C of the model, DIR/NAME.h and NAME.c. */
static PyObject *model_compile_impl(pyotc_model *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"emit_c", "name", NULL};
    PyObject *diro;
    const char *name = "model";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|s:compile", kwlist, PyUnicode_FSConverter, &diro,
                                     &name))
        return NULL;
    if (!otc_emit_c_valid_name(name)) {
        Py_DECREF(diro);
        PyErr_Format(PyExc_ValueError, "name: '%s' is not a C identifier", name);
        return NULL;
    }
    if (self->ex && otc_exec_sync_params(self->ex) != OTC_OK) {
        Py_DECREF(diro);
        return pyotc_fail();
    }
    otc_emit_c_options o = otc_emit_c_defaults();
    o.name = name;
    const char *dir = PyBytes_AS_STRING(diro);
    otc_status s;
    Py_BEGIN_ALLOW_THREADS s = otc_emit_c_files(self->g, &o, dir);
    Py_END_ALLOW_THREADS if (s != OTC_OK) {
        Py_DECREF(diro);
        return pyotc_fail();
    }
    PyObject *r = PyUnicode_FromFormat("%s/%s.h", dir, name);
    PyObject *c = PyUnicode_FromFormat("%s/%s.c", dir, name);
    PyObject *list = r && c ? PyList_New(2) : NULL;
    if (list) {
        PyList_SET_ITEM(list, 0, r);
        PyList_SET_ITEM(list, 1, c);
    } else {
        Py_XDECREF(r);
        Py_XDECREF(c);
    }
    Py_DECREF(diro);
    return list;
}
PYOTC_GUARD3(model_compile, pyotc_model, "Model")

/* jit(): run() from now on goes through the LLVM JIT (compiled here, so errors show now). */
static PyObject *model_jit_impl(pyotc_model *self, PyObject *noargs) {
    if (self->ex && otc_exec_sync_params(self->ex) != OTC_OK) return pyotc_fail();
    otc_exec_free(self->ex);
    self->ex = NULL;
    self->jit = true;
    if (ensure_executor(self) != OTC_OK) {
        self->jit = false;
        return pyotc_fail();
    }
    Py_INCREF(self);
    return (PyObject *)self;
}
PYOTC_GUARD2(model_jit, pyotc_model, "Model")

static PyObject *model_get_backend(pyotc_model *self, void *closure) {
    return PyUnicode_FromString(self->ex ? otc_exec_backend(self->ex) : "interpreter");
}

static PyObject *model_get_inputs(pyotc_model *self, void *closure) {
    return PyLong_FromLong(input_width(self->g));
}

static PyObject *model_get_outputs(pyotc_model *self, void *closure) {
    return PyLong_FromLong(otc_graph_output_count(self->g));
}

static PyObject *model_get_recurrent(pyotc_model *self, void *closure) {
    return PyBool_FromLong(otc_graph_is_recurrent(self->g));
}

static PyObject *model_meta(pyotc_model *self, PyObject *args) {
    const char *key;
    if (!PyArg_ParseTuple(args, "s:meta", &key)) return NULL;
    const char *v = otc_graph_meta_get(self->g, key);
    if (!v) Py_RETURN_NONE;
    return PyUnicode_FromString(v);
}

static PyMethodDef model_methods[] = {
    {"load", (PyCFunction)model_load, METH_VARARGS | METH_CLASS, "Model.load(path): an .otm file"},
    {"import_neat_python", (PyCFunction)(void (*)(void))model_import_neat_python,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Model.import_neat_python(path, advance_time=0, time_step=0): neat-python's network JSON"},
    {"from_genome", (PyCFunction)model_from_genome, METH_VARARGS | METH_CLASS,
     "Model.from_genome(genome, config): a NEAT genome's phenotype"},
    {"save", (PyCFunction)model_save, METH_VARARGS, "save(path): write an .otm file atomically"},
    {"export_onnx", (PyCFunction)model_export_onnx, METH_VARARGS,
     "export_onnx(path): write the model as an ONNX file (opset 13), atomically"},
    {"run", (PyCFunction)(void (*)(void))model_run, METH_VARARGS | METH_KEYWORDS,
     "run(X): outputs for X [batch, inputs] (recurrent: a sequence [steps, inputs], "
     "[sequences, steps, inputs] or a list of sequences)"},
    {"train", (PyCFunction)(void (*)(void))model_train, METH_VARARGS | METH_KEYWORDS,
     "train(X, y, epochs=10, lr=None, batch=32, optimizer='adam', loss='mse', seed=1, "
     "bptt=None)"},
    {"compile", (PyCFunction)(void (*)(void))model_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(emit_c=DIR, name='model'): standalone C files; returns their paths"},
    {"jit", (PyCFunction)model_jit, METH_NOARGS, "jit(): run() through the LLVM JIT"},
    {"meta", (PyCFunction)model_meta, METH_VARARGS, "meta(key): metadata JSON text or None"},
    {NULL}};

static PyGetSetDef model_getset[] = {
    {"backend", (getter)model_get_backend, NULL, "the executor run() uses", NULL},
    {"inputs", (getter)model_get_inputs, NULL, "floats per sample of the input", NULL},
    {"outputs", (getter)model_get_outputs, NULL, "number of outputs", NULL},
    {"recurrent", (getter)model_get_recurrent, NULL, "holds state between steps", NULL},
    {NULL}};

static PyTypeObject model_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "otc.Model",
    .tp_basicsize = sizeof(pyotc_model),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "An otc model: Model.load(path), run(X), train(X, y), save(path), compile(emit_c=DIR)",
    .tp_methods = model_methods,
    .tp_getset = model_getset,
};

int pyotc_add_model(PyObject *m) {
    if (PyType_Ready(&model_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "Model", (PyObject *)&model_type);
}
