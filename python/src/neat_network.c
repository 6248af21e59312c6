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

static void network_dealloc(pyotc_network *self) {
    otc_neat_flat_free(self->f);
    otc_neat_genome_free(self->g);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Network(genome, config, kind, time_constant=None): kind "feedforward", "recurrent" or
 * "ctrnn"; time_constant (ctrnn) replaces every node's own, as neat-python's older
 * CTRNN.create(genome, config, time_constant) did. */
static int network_init(pyotc_network *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"genome", "config", "kind", "time_constant", NULL};
    PyObject *genome, *config, *tco = Py_None;
    const char *kind;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!s|O:Network", kwlist, &pyotc_genome_type,
                                     &genome, &pyotc_config_type, &config, &kind, &tco))
        return -1;
    if (pyotc_enter(&self->busy, "Network") < 0) return -1;
    self->busy = false; /* nothing below releases the GIL */
    self->c = ((pyotc_config *)config)->c;
    bool ctrnn = strcmp(kind, "ctrnn") == 0;
    if (strcmp(kind, "feedforward") == 0) {
        self->c.feed_forward = true;
        self->c.ctrnn = false;
    } else if (strcmp(kind, "recurrent") == 0) {
        self->c.feed_forward = false;
        self->c.ctrnn = false;
    } else if (ctrnn) {
        self->c.ctrnn = true;
    } else {
        PyErr_Format(PyExc_ValueError, "kind: '%s' is not feedforward, recurrent or ctrnn", kind);
        return -1;
    }
    otc_neat_genome_free(self->g);
    if (!(self->g = otc_neat_genome_copy(((pyotc_genome *)genome)->g))) {
        PyErr_NoMemory();
        return -1;
    }
    if (tco != Py_None) {
        double tc = PyFloat_AsDouble(tco);
        if (tc == -1.0 && PyErr_Occurred()) return -1;
        if (!(tc > 0)) {
            PyErr_SetString(PyExc_ValueError, "time_constant: must be > 0");
            return -1;
        }
        for (int i = 0; i < self->g->n_nodes; i++) self->g->nodes[i].tau = (float)tc;
    }
    if (ctrnn && !(self->c.ctrnn_time_step > 0)) {
        /* advance() gives the times; a placeholder until then (rebuilt on first use). */
        self->c.ctrnn_advance_time = self->c.ctrnn_time_step = 0.01;
    }
    if (!self->f && !(self->f = otc_neat_flat_new())) {
        PyErr_NoMemory();
        return -1;
    }
    if (otc_neat_flat_build(self->f, self->g, &self->c) != OTC_OK) {
        pyotc_fail();
        return -1;
    }
    self->n_in = self->c.num_inputs;
    self->n_out = self->c.num_outputs;
    self->stepped = false;
    return 0;
}

/* inputs (any sequence of n_in numbers) into buf; TypeError/ValueError naming `inputs`. */
static int read_inputs(pyotc_network *self, PyObject *inputs, float *buf) {
    PyObject *seq = PySequence_Fast(inputs, "inputs: expected a sequence of numbers");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != self->n_in) {
        PyErr_Format(PyExc_ValueError, "inputs: expected %d values, got %zd", self->n_in,
                     PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (int i = 0; i < self->n_in; i++) {
        double v = PyFloat_AsDouble(items[i]);
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
    if (PyType_Ready(&network_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "Network", (PyObject *)&network_type);
}
