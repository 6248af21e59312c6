/* _otc.Network: a genome's flat program (otc/neat_flat.h) behind neat-python's
 * FeedForwardNetwork, RecurrentNetwork and CTRNN: activate() is one C call. */
#include <stdlib.h>
#include <string.h>

#include "pyotc.h"

typedef struct {
    PyObject_HEAD otc_neat_flat *f;
    otc_neat_genome *g; /* kept to rebuild a CTRNN for other times */
    otc_neat_config c;  /* the genome's config, phenotype kind and times set */
    int n_in, n_out;
    bool stepped; /* a recurrent step ran since the last reset */
    bool busy;    /* pyotc_enter */
} pyotc_network;

/* Flat programs of networks already freed, kept for the next create(): a fitness function
 * builds one network per genome, and a program reused keeps its ~30 arrays (otc_neat_flat_build
 * only grows them). Touched with the GIL held only. */
#define FLAT_POOL 16
static otc_neat_flat *flat_pool[FLAT_POOL];
static int flat_pool_n;

static void network_dealloc(pyotc_network *self) {
    if (self->f && flat_pool_n < FLAT_POOL)
        flat_pool[flat_pool_n++] = self->f;
    else
        otc_neat_flat_free(self->f);
    otc_neat_genome_free(self->g);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

enum { KIND_FEEDFORWARD, KIND_RECURRENT, KIND_CTRNN };

static int kind_of(const char *kind) {
    return strcmp(kind, "feedforward") == 0 ? KIND_FEEDFORWARD
           : strcmp(kind, "recurrent") == 0 ? KIND_RECURRENT
           : strcmp(kind, "ctrnn") == 0     ? KIND_CTRNN
                                            : -1;
}

/* Attribute names looked up on every create(), made once. */
static PyObject *name_c, *name_kind;

/* config as an otc.neat.Config (its parsed ._c) or a NeatConfig; NULL with a TypeError. */
static const otc_neat_config *config_of(PyObject *config) {
    if (PyObject_TypeCheck(config, &pyotc_config_type)) return &((pyotc_config *)config)->c;
    PyObject *inner = PyObject_GetAttr(config, name_c);
    const otc_neat_config *c = NULL;
    if (inner && PyObject_TypeCheck(inner, &pyotc_config_type))
        c = &((pyotc_config *)inner)->c; /* the Config object keeps ._c alive */
    Py_XDECREF(inner);
    if (!c) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "config: expected an otc.neat.Config, got %s",
                     Py_TYPE(config)->tp_name);
    }
    return c;
}

/* The program of genome under config as `kind`; time_constant (ctrnn; NULL or None: the
 * nodes' own) replaces every node's, as neat-python's older CTRNN.create did. */
static int network_build(pyotc_network *self, const pyotc_genome *genome,
                         const otc_neat_config *config, int kind, PyObject *tco) {
    self->c = *config;
    self->c.ctrnn = kind == KIND_CTRNN;
    if (kind != KIND_CTRNN) self->c.feed_forward = kind == KIND_FEEDFORWARD;
    const otc_neat_genome *g = genome->g;
    otc_neat_genome_free(self->g);
    self->g = NULL;
    /* Only a CTRNN keeps its genome: advance() rebuilds it for other times. */
    if (kind == KIND_CTRNN) {
        if (!(self->g = otc_neat_genome_copy(g))) {
            PyErr_NoMemory();
            return -1;
        }
        g = self->g;
    }
    if (tco && tco != Py_None) {
        double tc = PyFloat_AsDouble(tco);
        if (tc == -1.0 && PyErr_Occurred()) return -1;
        if (!(tc > 0)) {
            PyErr_SetString(PyExc_ValueError, "time_constant: must be > 0");
            return -1;
        }
        if (kind != KIND_CTRNN) {
            PyErr_SetString(PyExc_ValueError, "time_constant: only a CTRNN has one");
            return -1;
        }
        for (int i = 0; i < self->g->n_nodes; i++) self->g->nodes[i].tau = (float)tc;
    }
    if (kind == KIND_CTRNN && !(self->c.ctrnn_time_step > 0)) {
        /* advance() gives the times; a placeholder until then (rebuilt on first use). */
        self->c.ctrnn_advance_time = self->c.ctrnn_time_step = 0.01;
    }
    if (!self->f) self->f = flat_pool_n ? flat_pool[--flat_pool_n] : otc_neat_flat_new();
    if (!self->f) {
        PyErr_NoMemory();
        return -1;
    }
    if (otc_neat_flat_build(self->f, g, &self->c) != OTC_OK) {
        pyotc_fail();
        return -1;
    }
    self->n_in = self->c.num_inputs;
    self->n_out = self->c.num_outputs;
    self->stepped = false;
    return 0;
}

/* Network(genome, config, kind, time_constant=None): kind "feedforward", "recurrent" or
 * "ctrnn". */
static int network_init(pyotc_network *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"genome", "config", "kind", "time_constant", NULL};
    PyObject *genome, *config, *tco = Py_None;
    const char *kind;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!Os|O:Network", kwlist, &pyotc_genome_type,
                                     &genome, &config, &kind, &tco))
        return -1;
    if (pyotc_enter(&self->busy, "Network") < 0) return -1;
    self->busy = false; /* nothing below releases the GIL */
    int k = kind_of(kind);
    if (k < 0) {
        PyErr_Format(PyExc_ValueError, "kind: '%s' is not feedforward, recurrent or ctrnn", kind);
        return -1;
    }
    const otc_neat_config *c = config_of(config);
    return c ? network_build(self, (pyotc_genome *)genome, c, k, tco) : -1;
}

/* cls.create(genome, config[, time_constant]): neat-python's factory, one C call (no argument
 * tuple, no __init__); the kind is the class's _kind ("feedforward", "recurrent", "ctrnn"). */
static PyObject *network_create(PyObject *cls, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames) {
    static const char *const names[] = {"genome", "config", "time_constant"};
    PyObject *a[3] = {NULL, NULL, NULL};
    if (nargs > 3) {
        PyErr_Format(PyExc_TypeError, "create() takes at most 3 arguments (%zd given)", nargs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) a[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        int k = 0;
        while (k < 3 && PyUnicode_CompareWithASCIIString(name, names[k]) != 0) k++;
        if (k == 3 || a[k]) {
            PyErr_Format(PyExc_TypeError, "create(): %s argument '%U'",
                         k == 3 ? "unexpected" : "repeated", name);
            return NULL;
        }
        a[k] = args[nargs + i];
    }
    if (!a[0] || !a[1]) {
        PyErr_SetString(PyExc_TypeError, "create(genome, config): genome and config are needed");
        return NULL;
    }
    if (!PyObject_TypeCheck(a[0], &pyotc_genome_type)) {
        PyErr_Format(PyExc_TypeError, "genome: expected an otc.neat genome, got %s",
                     Py_TYPE(a[0])->tp_name);
        return NULL;
    }
    const otc_neat_config *c = config_of(a[1]);
    if (!c) return NULL;
    PyObject *kindo = PyObject_GetAttr(cls, name_kind);
    if (!kindo) return NULL;
    const char *ks = PyUnicode_AsUTF8(kindo);
    int k = ks ? kind_of(ks) : -1;
    Py_DECREF(kindo);
    if (k < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "create(): the class's _kind is not feedforward, "
                                             "recurrent or ctrnn");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    pyotc_network *self = (pyotc_network *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    if (network_build(self, (pyotc_genome *)a[0], c, k, a[2]) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* inputs (any sequence of n_in numbers) into buf; TypeError/ValueError naming `inputs`. A list
 * or tuple is read in place, and a float item without a conversion call. */
static int read_inputs(pyotc_network *self, PyObject *inputs, float *buf) {
    PyObject *seq = PyList_CheckExact(inputs) || PyTuple_CheckExact(inputs)
                        ? Py_NewRef(inputs)
                        : PySequence_Fast(inputs, "inputs: expected a sequence of numbers");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != self->n_in) {
        PyErr_Format(PyExc_ValueError, "inputs: expected %d values, got %zd", self->n_in,
                     PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (int i = 0; i < self->n_in; i++) {
        double v =
            PyFloat_CheckExact(items[i]) ? PyFloat_AS_DOUBLE(items[i]) : PyFloat_AsDouble(items[i]);
        if (v == -1.0 && PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "inputs[%d]: expected a number, got %s", i,
                         Py_TYPE(items[i])->tp_name);
            Py_DECREF(seq);
            return -1;
        }
        buf[i] = (float)v;
    }
    Py_DECREF(seq);
    return 0;
}

static PyObject *forward_one(pyotc_network *self, PyObject *inputs) {
    float stackx[64], stacky[64];
    float *x = self->n_in <= 64 ? stackx : malloc(sizeof *x * (size_t)self->n_in);
    float *y = self->n_out <= 64 ? stacky : malloc(sizeof *y * (size_t)self->n_out);
    PyObject *r = NULL;
    if (!x || !y) {
        PyErr_NoMemory();
    } else if (read_inputs(self, inputs, x) == 0) {
        if (otc_neat_flat_forward(self->f, x, 1, y) != OTC_OK) {
            pyotc_fail();
        } else {
            self->stepped = true;
            r = PyList_New(self->n_out);
            for (int k = 0; r && k < self->n_out; k++) {
                PyObject *v = PyFloat_FromDouble(y[k]);
                if (!v)
                    Py_CLEAR(r);
                else
                    PyList_SET_ITEM(r, k, v);
            }
        }
    }
    if (x != stackx) free(x);
    if (y != stacky) free(y);
    return r;
}

/* activate(inputs) -> list of outputs (one step of a recurrent network). */
static PyObject *network_activate_impl(pyotc_network *self, PyObject *inputs) {
    return forward_one(self, inputs);
}
PYOTC_GUARD2(network_activate, pyotc_network, "Network")

/* advance(inputs, advance_time, time_step): CTRNN.advance. The times are fixed between
 * resets (the program integrates with them). */
static PyObject *network_advance_impl(pyotc_network *self, PyObject *args) {
    PyObject *inputs;
    double advance, step;
    if (!PyArg_ParseTuple(args, "Odd:advance", &inputs, &advance, &step)) return NULL;
    if (!self->c.ctrnn) {
        PyErr_SetString(PyExc_TypeError, "advance() is for CTRNN networks");
        return NULL;
    }
    if (!(advance > 0) || !(step > 0)) {
        PyErr_SetString(PyExc_ValueError, "advance_time and time_step must be > 0");
        return NULL;
    }
    if (advance != self->c.ctrnn_advance_time || step != self->c.ctrnn_time_step) {
        if (self->stepped) {
            PyErr_SetString(PyExc_ValueError,
                            "advance_time and time_step cannot change between resets");
            return NULL;
        }
        if (otc_neat_config_ctrnn(&self->c, "advance()", advance, step) != OTC_OK ||
            otc_neat_flat_build(self->f, self->g, &self->c) != OTC_OK)
            return pyotc_fail();
    }
    return forward_one(self, inputs);
}
PYOTC_GUARD2(network_advance, pyotc_network, "Network")

/* activate_batch(X): X [rows, inputs] -> [rows, outputs], each row its own network (a
 * recurrent one steps every row's state). */
static PyObject *network_activate_batch_impl(pyotc_network *self, PyObject *xo) {
    PyArrayObject *x = pyotc_float_array(xo, "X", 2);
    if (!x) return NULL;
    npy_intp rows = PyArray_DIM(x, 0);
    if (PyArray_DIM(x, 1) != self->n_in || rows < 1) {
        PyErr_Format(PyExc_ValueError, "X: expected shape [rows >= 1, %d]", self->n_in);
        Py_DECREF(x);
        return NULL;
    }
    npy_intp dims[2] = {rows, self->n_out};
    PyObject *y = PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    if (!y) {
        Py_DECREF(x);
        return NULL;
    }
    otc_status s;
    Py_BEGIN_ALLOW_THREADS s = otc_neat_flat_forward(self->f, PyArray_DATA(x), (int)rows,
                                                     PyArray_DATA((PyArrayObject *)y));
    Py_END_ALLOW_THREADS Py_DECREF(x);
    if (s != OTC_OK) {
        Py_DECREF(y);
        return pyotc_fail();
    }
    self->stepped = true;
    return y;
}
PYOTC_GUARD2(network_activate_batch, pyotc_network, "Network")

static PyObject *network_reset_impl(pyotc_network *self, PyObject *noargs) {
    otc_neat_flat_reset(self->f);
    self->stepped = false;
    Py_RETURN_NONE;
}
PYOTC_GUARD2(network_reset, pyotc_network, "Network")

static PyMethodDef network_methods[] = {
    {"create", (PyCFunction)(void (*)(void))network_create,
     METH_FASTCALL | METH_KEYWORDS | METH_CLASS,
     "create(genome, config[, time_constant]) -> network of the class's _kind"},
    {"activate", (PyCFunction)network_activate, METH_O, "activate(inputs) -> outputs"},
    {"advance", (PyCFunction)network_advance, METH_VARARGS,
     "advance(inputs, advance_time, time_step) -> outputs"},
    {"activate_batch", (PyCFunction)network_activate_batch, METH_O,
     "activate_batch(X [rows, inputs]) -> [rows, outputs]"},
    {"reset", (PyCFunction)network_reset, METH_NOARGS, "recurrent state back to zero"},
    {NULL}};

static PyTypeObject network_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "otc._otc.Network",
    .tp_basicsize = sizeof(pyotc_network),
    .tp_dealloc = (destructor)network_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Network(genome, config, kind): a genome's flat program",
    .tp_init = (initproc)network_init,
    .tp_new = PyType_GenericNew,
    .tp_methods = network_methods,
};

int pyotc_add_network(PyObject *m) {
    if (!(name_c = PyUnicode_InternFromString("_c")) ||
        !(name_kind = PyUnicode_InternFromString("_kind")) || PyType_Ready(&network_type) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "Network", (PyObject *)&network_type);
}
