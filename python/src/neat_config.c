/* _otc.NeatConfig: a neat-python INI file parsed and checked by otc (otc/neat_config.h). */
#include <stddef.h>

#include "pyotc.h"
#include "structmember.h"

static int config_init(pyotc_config *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", NULL};
    PyObject *patho;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:NeatConfig", kwlist, PyUnicode_FSConverter,
                                     &patho))
        return -1;
    otc_status s;
    const char *path = PyBytes_AS_STRING(patho);
    s = otc_neat_config_load(path, &self->c);
    Py_DECREF(patho);
    if (s != OTC_OK) {
        pyotc_fail();
        return -1;
    }
    return 0;
}

static PyObject *config_get_criterion(pyotc_config *self, void *closure) {
    static const char *names[] = {"max", "min", "mean", "median"};
    return PyUnicode_FromString(names[self->c.fitness_criterion]);
}

/* Makes the phenotypes CTRNNs advancing advance_time in steps of time_step (0: the file's). */
static PyObject *config_ctrnn(pyotc_config *self, PyObject *args) {
    double advance = 0, step = 0;
    if (!PyArg_ParseTuple(args, "|dd:ctrnn", &advance, &step)) return NULL;
    if (otc_neat_config_ctrnn(&self->c, "ctrnn()", advance, step) != OTC_OK) return pyotc_fail();
    Py_RETURN_NONE;
}

#define M(name, type, field, doc)                                                                  \
    { name, type, offsetof(pyotc_config, c.field), READONLY, doc }
static PyMemberDef config_members[] = {
    M("num_inputs", T_INT, num_inputs, "inputs of every genome"),
    M("num_outputs", T_INT, num_outputs, "outputs of every genome"),
    M("num_hidden", T_INT, num_hidden, "hidden nodes of a fresh genome"),
    M("pop_size", T_INT, pop_size, "genomes per generation"),
    M("fitness_threshold", T_DOUBLE, fitness_threshold, "the run stops at this fitness"),
    M("no_fitness_termination", T_BOOL, no_fitness_termination, "never stop on fitness"),
    M("reset_on_extinction", T_BOOL, reset_on_extinction, "a new population on extinction"),
    M("feed_forward", T_BOOL, feed_forward, "no recurrent connections"),
    M("compatibility_threshold", T_DOUBLE, compatibility_threshold, "speciation distance"),
    M("max_stagnation", T_INT, max_stagnation, "generations without improvement"),
    M("species_elitism", T_INT, species_elitism, "species protected from stagnation"),
    M("elitism", T_INT, elitism, "genomes copied unchanged per species"),
    M("survival_threshold", T_DOUBLE, survival_threshold, "share of a species that breeds"),
    M("ctrnn_advance_time", T_DOUBLE, ctrnn_advance_time, "CTRNN seconds per forward"),
    M("ctrnn_time_step", T_DOUBLE, ctrnn_time_step, "CTRNN integration step"),
    M("has_seed", T_BOOL, has_seed, "the file gives [NEAT] seed"),
    M("seed", T_ULONGLONG, seed, "the file's seed"),
    {NULL}};
#undef M

static PyGetSetDef config_getset[] = {
    {"fitness_criterion", (getter)config_get_criterion, NULL, "max, min, mean or median", NULL},
    {NULL}};

/* NeatConfig._parse(text, name): a config from INI text (checkpoints carry theirs). */
static PyObject *config_parse(PyObject *cls, PyObject *args) {
    const char *text, *name;
    if (!PyArg_ParseTuple(args, "ss:_parse", &text, &name)) return NULL;
    pyotc_config *self = (pyotc_config *)((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    if (!self) return NULL;
    if (otc_neat_config_parse(text, name, &self->c) != OTC_OK) {
        Py_DECREF(self);
        return pyotc_fail();
    }
    return (PyObject *)self;
}

static PyMethodDef config_methods[] = {
    {"_parse", (PyCFunction)config_parse, METH_VARARGS | METH_CLASS, "a config from INI text"},
    {"ctrnn", (PyCFunction)config_ctrnn, METH_VARARGS,
     "ctrnn(advance_time=0, time_step=0): phenotypes are CTRNNs"},
    {NULL}};

PyTypeObject pyotc_config_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "otc._otc.NeatConfig",
    .tp_basicsize = sizeof(pyotc_config),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "NeatConfig(path): a NEAT config in neat-python's INI format",
    .tp_init = (initproc)config_init,
    .tp_new = PyType_GenericNew,
    .tp_members = config_members,
    .tp_getset = config_getset,
    .tp_methods = config_methods,
};

int pyotc_add_neat_config(PyObject *m) {
    if (PyType_Ready(&pyotc_config_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "NeatConfig", (PyObject *)&pyotc_config_type);
}
