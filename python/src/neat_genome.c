/* _otc.Genome: one NEAT genome as neat-python shows it (key, fitness, node and connection
 * genes under neat-python's keys: inputs -1, -2, ..., outputs 0 .. n-1, hidden nodes after). */
#include <stdlib.h>

#include "pyotc.h"

/* neat-python's key of otc node id (inputs 0.. -> -1..; outputs and hidden keep their order). */
static long np_key(const pyotc_genome *self, int id) {
    return id < self->first_output ? -(long)id - 1 : (long)(id - self->first_output);
}

PyObject *pyotc_genome_wrap(PyTypeObject *type, const otc_neat_genome *g, const otc_neat_config *c,
                            long key) {
    if (!PyType_IsSubtype(type, &pyotc_genome_type)) {
        PyErr_SetString(PyExc_TypeError, "genome_type: not a subclass of otc._otc.Genome");
        return NULL;
    }
    pyotc_genome *self = (pyotc_genome *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->g = otc_neat_genome_copy(g);
    if (!self->g) {
        Py_DECREF(self);
        PyErr_NoMemory();
        return NULL;
    }
    self->key = key;
    self->first_output = c->num_inputs + (c->bias_node ? 1 : 0);
    if (g->evaluated) {
        self->fitness = PyFloat_FromDouble(g->fitness);
        if (!self->fitness) {
            Py_DECREF(self);
            return NULL;
        }
    } else {
        self->fitness = Py_NewRef(Py_None);
    }
    return (PyObject *)self;
}

static void genome_dealloc(pyotc_genome *self) {
    otc_neat_genome_free(self->g);
    Py_XDECREF(self->fitness);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *genome_get_fitness(pyotc_genome *self, void *closure) {
    return Py_NewRef(self->fitness ? self->fitness : Py_None);
}

/* neat-python's fitness is any number (or None): kept as a Python float. */
static int genome_set_fitness(pyotc_genome *self, PyObject *v, void *closure) {
    PyObject *f = Py_None;
    if (!v) {
        PyErr_SetString(PyExc_AttributeError, "fitness cannot be deleted");
        return -1;
    }
    if (v != Py_None) {
        f = PyNumber_Float(v);
        if (!f) {
            PyErr_Format(PyExc_TypeError, "fitness: expected a number, got %s",
                         Py_TYPE(v)->tp_name);
            return -1;
        }
    } else {
        Py_INCREF(f);
    }
    Py_XSETREF(self->fitness, f);
    return 0;
}

static PyObject *genome_get_key(pyotc_genome *self, void *closure) {
    return PyLong_FromLong(self->key);
}

/* (nodes, connections): node tuples (key, bias, response, activation, aggregation,
 * time_constant) of output and hidden nodes, connection tuples (in_key, out_key, weight,
 * enabled, innovation), in otc's order. */
static PyObject *genome_genes(pyotc_genome *self, PyObject *noargs) {
    const otc_neat_genome *g = self->g;
    PyObject *nodes = PyList_New(0), *conns = PyList_New(0);
    if (!nodes || !conns) goto fail;
    for (int i = 0; i < g->n_nodes; i++) {
        const otc_neat_node *n = &g->nodes[i];
        if (n->type != OTC_NEAT_OUTPUT && n->type != OTC_NEAT_HIDDEN) continue;
        const char *agg = otc_agg_name(n->agg);
        PyObject *t =
            Py_BuildValue("(lddssd)", np_key(self, n->id), (double)n->bias, (double)n->response,
                          otc_neat_act_name(n->act), agg ? agg : "sum", (double)n->tau);
        if (!t || PyList_Append(nodes, t) < 0) {
            Py_XDECREF(t);
            goto fail;
        }
        Py_DECREF(t);
    }
    for (int i = 0; i < g->n_conns; i++) {
        const otc_neat_conn *c = &g->conns[i];
        PyObject *t = Py_BuildValue("(lldOi)", np_key(self, c->in), np_key(self, c->out),
                                    (double)c->weight, c->enabled ? Py_True : Py_False, c->innov);
        if (!t || PyList_Append(conns, t) < 0) {
            Py_XDECREF(t);
            goto fail;
        }
        Py_DECREF(t);
    }
    return Py_BuildValue("(NN)", nodes, conns);
fail:
    Py_XDECREF(nodes);
    Py_XDECREF(conns);
    return NULL;
}

static PyObject *genome_to_json(pyotc_genome *self, PyObject *noargs) {
    char *json = otc_neat_genome_to_json(self->g);
    if (!json) return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(json);
    free(json);
    return r;
}

static PyObject *genome_size(pyotc_genome *self, PyObject *noargs) {
    return Py_BuildValue("(ii)", otc_neat_genome_hidden_count(self->g) + 0,
                         otc_neat_genome_enabled_count(self->g));
}

/* Genome._from_json(json, key, first_output, fitness): the inverse of __reduce__ (pickling, for
 * ParallelEvaluator's worker processes). The JSON is checked as any other input. */
static PyObject *genome_from_json(PyObject *cls, PyObject *args) {
    const char *json;
    long key;
    int first_output;
    PyObject *fitness;
    if (!PyArg_ParseTuple(args, "sliO:_from_json", &json, &key, &first_output, &fitness))
        return NULL;
    otc_neat_genome *g = NULL;
    if (otc_neat_genome_from_json(json, &g) != OTC_OK) return pyotc_fail();
    pyotc_genome *self = (pyotc_genome *)((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    if (!self) {
        otc_neat_genome_free(g);
        return NULL;
    }
    self->g = g;
    self->key = key;
    self->first_output = first_output;
    self->fitness = Py_NewRef(Py_None);
    if (genome_set_fitness(self, fitness, NULL) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *genome_reduce(pyotc_genome *self, PyObject *noargs) {
    char *json = otc_neat_genome_to_json(self->g);
    if (!json) return PyErr_NoMemory();
    PyObject *from = PyObject_GetAttrString((PyObject *)Py_TYPE(self), "_from_json");
    PyObject *r = from ? Py_BuildValue("(N(sliO))", from, json, self->key, self->first_output,
                                       self->fitness ? self->fitness : Py_None)
                       : NULL;
    free(json);
    return r;
}

static PyMethodDef genome_methods[] = {
    {"_from_json", (PyCFunction)genome_from_json, METH_VARARGS | METH_CLASS, "unpickle"},
    {"__reduce__", (PyCFunction)genome_reduce, METH_NOARGS, "pickle as otc's genome JSON"},
    {"_genes", (PyCFunction)genome_genes, METH_NOARGS, "node and connection gene tuples"},
    {"to_json", (PyCFunction)genome_to_json, METH_NOARGS, "otc's JSON form of the genome"},
    {"_size", (PyCFunction)genome_size, METH_NOARGS, "(hidden nodes, enabled connections)"},
    {NULL}};

static PyGetSetDef genome_getset[] = {
    {"fitness", (getter)genome_get_fitness, (setter)genome_set_fitness, "fitness or None", NULL},
    {"key", (getter)genome_get_key, NULL, "the genome's id", NULL},
    {NULL}};

PyTypeObject pyotc_genome_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "otc._otc.Genome",
    .tp_basicsize = sizeof(pyotc_genome),
    .tp_dealloc = (destructor)genome_dealloc,
    /* A base type: otc.neat's DefaultGenome adds neat-python's gene dicts in Python. */
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A NEAT genome (a copy of otc's)",
    .tp_methods = genome_methods,
    .tp_getset = genome_getset,
};

int pyotc_add_genome(PyObject *m) {
    if (PyType_Ready(&pyotc_genome_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "Genome", (PyObject *)&pyotc_genome_type);
}
