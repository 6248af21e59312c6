/* What the _otc extension's files share: numpy's C API table, otc errors as Python
 * exceptions, argument checks that name the argument, and each type's registration. */
#ifndef PYOTC_H
#define PYOTC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
/* One numpy API table for the whole extension, imported once in module.c. */
#define PY_ARRAY_UNIQUE_SYMBOL pyotc_ARRAY_API
#define NPY_NO_DEPRECATED_API  NPY_1_7_API_VERSION
#ifndef PYOTC_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "otc/data.h"
#include "otc/error.h"
#include "otc/executor.h"
#include "otc/optim.h"
#include "otc/neat.h"

/* otc.OtcError: raised with otc_last_error() whenever an otc call fails. */
extern PyObject *pyotc_error;
/* Sets otc.OtcError from otc_last_error() (ValueError-like statuses keep their message) and
 * returns NULL, so callers can write `return pyotc_fail();`. */
PyObject *pyotc_fail(void);

/* obj as a C-contiguous float32 array of ndim dims, any number when ndim is -1 (new reference;
 * the same object, not a copy, when it already is one). TypeError / ValueError naming `what`
 * otherwise. */
PyArrayObject *pyotc_float_array(PyObject *obj, const char *what, int ndim);

/* Objects whose C state is used with the GIL released (a model's executor, a population, a
 * network's program) take one caller at a time: another thread, or a fitness function calling
 * back into the population it is scoring, gets a RuntimeError instead of a data race.
 * PYOTC_GUARD2/3 define `name` as name_impl called under that rule (self->busy). */
static inline int pyotc_enter(bool *busy, const char *what) {
    if (*busy) {
        PyErr_Format(PyExc_RuntimeError, "this %s is in use (by another thread or a callback)",
                     what);
        return -1;
    }
    *busy = true;
    return 0;
}
#define PYOTC_GUARD2(name, T, what)                                                                \
    static PyObject *name(T *self, PyObject *a) {                                                  \
        if (pyotc_enter(&self->busy, what) < 0) return NULL;                                       \
        PyObject *r = name##_impl(self, a);                                                        \
        self->busy = false;                                                                        \
        return r;                                                                                  \
    }
#define PYOTC_GUARD3(name, T, what)                                                                \
    static PyObject *name(T *self, PyObject *a, PyObject *k) {                                     \
        if (pyotc_enter(&self->busy, what) < 0) return NULL;                                       \
        PyObject *r = name##_impl(self, a, k);                                                     \
        self->busy = false;                                                                        \
        return r;                                                                                  \
    }

/* ---- sequences for recurrent models (model_seq.c) ---- */
typedef enum {
    PYOTC_SEQ_ONE,   /* a [steps, width] array: one sequence */
    PYOTC_SEQ_BATCH, /* a [sequences, steps, width] array */
    PYOTC_SEQ_LIST   /* a list of [steps_i, width] arrays */
} pyotc_seq_form;
/* X's sequences (width floats per step) with y's (twidth per step; y NULL: none) as a new
 * dataset, *form saying how X gave them; NULL with a TypeError/ValueError naming X, y or
 * the item. */
otc_seq_dataset *pyotc_sequences(PyObject *x, PyObject *y, int width, int twidth,
                                 pyotc_seq_form *form);
/* -1 with a ValueError naming X or y, the sequence and the step, on a value not finite. */
int pyotc_sequences_finite(const otc_seq_dataset *d);
/* Every sequence of d through ex from a reset state (batches of one length; call without the
 * GIL): values[k] (malloc'd) holds output k for each of d's rows, per[k] floats a row. */
otc_status pyotc_run_sequences(otc_executor *ex, otc_id input, const otc_id *outs, int n_out,
                               const otc_seq_dataset *d, float **values, int *per);
/* Training through time as `otc train` does on sequences (call without the GIL). */
typedef struct {
    otc_executor *ex;
    otc_optimizer *opt;
    otc_id input, target, loss;
    const otc_seq_dataset *d;
    int batch, bptt, epochs; /* sequences per step; steps per update */
    uint64_t seed;
} pyotc_seq_train;
/* losses[e]: epoch e's loss, the mean over every step of every sequence. */
otc_status pyotc_train_sequences(const pyotc_seq_train *j, double *losses);

/* A NEAT config owned by a Python object (otc.neat.Config keeps one). */
typedef struct {
    PyObject_HEAD otc_neat_config c;
} pyotc_config;
extern PyTypeObject pyotc_config_type;

/* A genome: an owned copy of otc's genome plus neat-python's key and fitness. */
typedef struct {
    PyObject_HEAD otc_neat_genome *g;
    long key;
    PyObject *fitness; /* None until evaluated */
    int first_output;  /* otc id of output 0 (neat-python's key 0) */
} pyotc_genome;
extern PyTypeObject pyotc_genome_type;
/* A new genome of `type` (Genome or a subclass) holding a copy of g. */
PyObject *pyotc_genome_wrap(PyTypeObject *type, const otc_neat_genome *g, const otc_neat_config *c,
                            long key);

int pyotc_add_model(PyObject *m);
int pyotc_add_neat_config(PyObject *m);
int pyotc_add_genome(PyObject *m);
int pyotc_add_population(PyObject *m);
int pyotc_add_network(PyObject *m);

#endif
