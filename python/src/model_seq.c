/* Sequences for otc.Model's recurrent models, with the semantics of `otc run` and `otc train`
 * on them: X (and y) read as sequences of steps, each sequence run from a reset state, and
 * training through time (truncated at bptt steps) over batches of sequences of one length. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "otc/otc.h"
#include "pyotc.h"

/* Item i of a list of sequences (or the whole of X, i -1) as a [steps, width] float32 array;
 * errors name `what` (and the item). */
static PyArrayObject *steps_array(PyObject *o, const char *what, Py_ssize_t i, int width) {
    char name[64];
    if (i >= 0)
        snprintf(name, sizeof name, "%s[%zd]", what, i);
    else
        snprintf(name, sizeof name, "%s", what);
    PyArrayObject *a = pyotc_float_array(o, name, 2);
    if (a && (PyArray_DIM(a, 0) < 1 || PyArray_DIM(a, 1) != width)) {
        PyObject *shape = PyObject_GetAttrString((PyObject *)a, "shape");
        if (shape)
            PyErr_Format(PyExc_ValueError, "%s: expected shape [steps, %d] with steps >= 1, got %S",
                         name, width, shape);
        Py_XDECREF(shape);
        Py_CLEAR(a);
    }
    return a;
}

/* Whether o is a list (or tuple) of sequences: its first item is itself 2-D. A list of rows
 * ([[x0], [x1], ...]) is one sequence. */
static bool is_list_of_sequences(PyObject *o) {
    if (!(PyList_Check(o) || PyTuple_Check(o)) || PySequence_Fast_GET_SIZE(o) < 1) return false;
    PyObject *first = PySequence_Fast_GET_ITEM(o, 0);
    if (PyArray_Check(first)) return PyArray_NDIM((PyArrayObject *)first) == 2;
    if (!(PyList_Check(first) || PyTuple_Check(first)) || PySequence_Fast_GET_SIZE(first) < 1)
        return false;
    PyObject *row = PySequence_Fast_GET_ITEM(first, 0);
    return PyList_Check(row) || PyTuple_Check(row) || PyArray_Check(row);
}

/* The sequences of `o` (width floats per step) as n arrays [steps_i, width] (new references in
 * *arrays, freed by the caller with free_arrays). */
static int sequence_arrays(PyObject *o, const char *what, int width, pyotc_seq_form *form,
                           PyArrayObject ***arrays, Py_ssize_t *n) {
    *arrays = NULL;
    *n = 0;
    if (is_list_of_sequences(o)) {
        *form = PYOTC_SEQ_LIST;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(o);
        PyArrayObject **a = calloc((size_t)m, sizeof *a);
        if (!a) {
            PyErr_NoMemory();
            return -1;
        }
        *arrays = a;
        for (Py_ssize_t i = 0; i < m; i++) {
            if (!(a[i] = steps_array(PySequence_Fast_GET_ITEM(o, i), what, i, width))) return -1;
            *n = i + 1;
        }
        return 0;
    }
    PyArrayObject *x = pyotc_float_array(o, what, -1);
    if (!x) return -1;
    if (PyArray_NDIM(x) == 2) {
        *form = PYOTC_SEQ_ONE;
        PyArrayObject **a = calloc(1, sizeof *a);
        if (a) a[0] = steps_array((PyObject *)x, what, -1, width);
        Py_DECREF(x);
        if (!a) PyErr_NoMemory();
        *arrays = a;
        if (!a || !a[0]) return -1;
        *n = 1;
        return 0;
    }
    if (PyArray_NDIM(x) != 3 || PyArray_DIM(x, 0) < 1 || PyArray_DIM(x, 1) < 1 ||
        PyArray_DIM(x, 2) != width) {
        PyObject *shape = PyObject_GetAttrString((PyObject *)x, "shape");
        if (shape)
            PyErr_Format(PyExc_ValueError,
                         "%s: expected [steps, %d] (one sequence), [sequences, steps, %d] or a "
                         "list of [steps, %d] arrays, got shape %S",
                         what, width, width, width, shape);
        Py_XDECREF(shape);
        Py_DECREF(x);
        return -1;
    }
    /* [sequences, steps, width]: sequence i is x[i], viewed (no copy) as [steps, width]. */
    *form = PYOTC_SEQ_BATCH;
    Py_ssize_t m = PyArray_DIM(x, 0);
    PyArrayObject **a = calloc((size_t)m, sizeof *a);
    if (!a) {
        Py_DECREF(x);
        PyErr_NoMemory();
        return -1;
    }
    *arrays = a;
    npy_intp dims[2] = {PyArray_DIM(x, 1), width};
    for (Py_ssize_t i = 0; i < m; i++) {
        float *base = (float *)PyArray_DATA(x) + (size_t)i * (size_t)dims[0] * (size_t)width;
        a[i] = (PyArrayObject *)PyArray_SimpleNewFromData(2, dims, NPY_FLOAT32, base);
        if (!a[i] || PyArray_SetBaseObject(a[i], Py_NewRef(x)) < 0) {
            Py_DECREF(x);
            return -1;
        }
        *n = i + 1;
    }
    Py_DECREF(x);
    return 0;
}

static void free_arrays(PyArrayObject **a, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(a[i]);
    free(a);
}

otc_seq_dataset *pyotc_sequences(PyObject *x, PyObject *y, int width, int twidth,
                                 pyotc_seq_form *form) {
    PyArrayObject **xs = NULL, **ys = NULL;
    Py_ssize_t nx = 0, ny = 0;
    otc_seq_dataset *d = NULL;
    int *len = NULL;
    pyotc_seq_form yform;
    if (sequence_arrays(x, "X", width, form, &xs, &nx) < 0) goto out;
    if (y && sequence_arrays(y, "y", twidth, &yform, &ys, &ny) < 0) goto out;
    if (nx > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "X: too many sequences");
        goto out;
    }
    if (y && ny != nx) {
        PyErr_Format(PyExc_ValueError, "y: %zd sequence(s), X has %zd", ny, nx);
        goto out;
    }
    if (!(len = malloc(sizeof *len * (size_t)nx))) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < nx; i++) {
        len[i] = (int)PyArray_DIM(xs[i], 0);
        if (y && PyArray_DIM(ys[i], 0) != len[i]) {
            PyErr_Format(PyExc_ValueError, "y[%zd]: %ld steps, X[%zd] has %d", i,
                         (long)PyArray_DIM(ys[i], 0), i, len[i]);
            goto out;
        }
    }
    if (!(d = otc_seq_dataset_new((int)nx, len, width, y ? twidth : 0))) {
        pyotc_fail();
        goto out;
    }
    for (Py_ssize_t i = 0; i < nx; i++) {
        size_t r = (size_t)d->start[i];
        memcpy(d->data->x + r * (size_t)width, PyArray_DATA(xs[i]),
               sizeof(float) * (size_t)len[i] * (size_t)width);
        if (y)
            memcpy(d->data->y + r * (size_t)twidth, PyArray_DATA(ys[i]),
                   sizeof(float) * (size_t)len[i] * (size_t)twidth);
    }
out:
    free(len);
    free_arrays(xs, nx);
    free_arrays(ys, ny);
    return d;
}

int pyotc_sequences_finite(const otc_seq_dataset *d) {
    const otc_dataset *data = d->data;
    for (int i = 0; i < d->n; i++)
        for (int t = 0; t < d->len[i]; t++) {
            size_t r = (size_t)d->start[i] + (size_t)t;
            const char *bad = NULL;
            for (int k = 0; k < data->n_features && !bad; k++)
                if (!isfinite(data->x[r * (size_t)data->n_features + (size_t)k])) bad = "X";
            for (int k = 0; k < data->n_targets && !bad; k++)
                if (!isfinite(data->y[r * (size_t)data->n_targets + (size_t)k])) bad = "y";
            if (bad) {
                PyErr_Format(PyExc_ValueError, "%s: sequence %d, step %d: not a finite number", bad,
                             i, t);
                return -1;
            }
        }
    return 0;
}

otc_status pyotc_run_sequences(otc_executor *ex, otc_id input, const otc_id *outs, int n_out,
                               const otc_seq_dataset *d, float **values, int *per) {
    otc_seq_loader *l = otc_seq_loader_new(d, d->n, false, false, 0);
    if (!l) return otc_fail(OTC_ERR_NOMEM, "out of memory for the sequences");
    for (int k = 0; k < n_out; k++) values[k] = NULL;
    otc_status s = OTC_OK;
    int T, B;
    const float *x;
    const int *seqs;
    while (s == OTC_OK && (B = otc_seq_loader_next(l, &T, &x, NULL, &seqs)) > 0) {
        otc_exec_reset_state(ex);
        for (int t = 0; t < T && s == OTC_OK; t++) {
            s = otc_exec_set_input(ex, input,
                                   x + (size_t)t * (size_t)B * (size_t)d->data->n_features, B);
            if (s == OTC_OK) s = otc_exec_forward(ex);
            for (int k = 0; k < n_out && s == OTC_OK; k++) {
                const float *y;
                otc_shape sh;
                if ((s = otc_exec_value(ex, outs[k], &y, &sh)) != OTC_OK) break;
                if (!values[k]) { /* one step's size known: room for every step */
                    per[k] = (int)(otc_shape_size(sh) / (sh.ndim > 0 ? sh.dim[0] : 1));
                    values[k] = malloc(sizeof *values[k] * (size_t)d->data->rows * (size_t)per[k]);
                    if (!values[k]) {
                        s = otc_fail(OTC_ERR_NOMEM, "out of memory for the outputs");
                        break;
                    }
                }
                for (int b = 0; b < B; b++)
                    memcpy(values[k] + ((size_t)d->start[seqs[b]] + (size_t)t) * (size_t)per[k],
                           y + (size_t)b * (size_t)per[k], sizeof *y * (size_t)per[k]);
            }
        }
    }
    otc_seq_loader_free(l);
    return s;
}

/* One batch of B sequences of T steps (x, y step-major) from a reset state, trained in chunks
 * of bptt steps (the state carried across chunks, the gradient cut at their start), each
 * chunk's loss the mean over its steps; adds the loss summed over steps and rows to *sum. */
static otc_status train_batch(const pyotc_seq_train *j, int T, int B, const float *x,
                              const float *y, float *weight, double *sum) {
    otc_status s;
    int nf = j->d->data->n_features, nt = j->d->data->n_targets;
    otc_exec_reset_state(j->ex);
    for (int t0 = 0; t0 < T; t0 += j->bptt) {
        int k = T - t0 < j->bptt ? T - t0 : j->bptt;
        if ((s = otc_exec_seq_begin(j->ex, k)) != OTC_OK) return s;
        for (int t = t0; t < t0 + k; t++) {
            const float *lv;
            if ((s = otc_exec_set_input(j->ex, j->input, x + (size_t)t * (size_t)B * (size_t)nf,
                                        B)) != OTC_OK ||
                (s = otc_exec_set_input(j->ex, j->target, y + (size_t)t * (size_t)B * (size_t)nt,
                                        B)) != OTC_OK ||
                (s = otc_exec_forward(j->ex)) != OTC_OK ||
                (s = otc_exec_value(j->ex, j->loss, &lv, NULL)) != OTC_OK)
                return s;
            if (!isfinite(lv[0]))
                return otc_fail(OTC_ERR_STATE,
                                "the loss became %g at step %d; try a smaller lr or bptt",
                                (double)lv[0], t + 1);
            *sum += (double)lv[0] * B; /* every loss is a mean over rows */
        }
        for (int t = 0; t < k; t++) weight[t] = 1.0f / (float)k;
        otc_exec_zero_grad(j->ex);
        if ((s = otc_exec_seq_backward(j->ex, j->loss, weight)) != OTC_OK ||
            (s = otc_exec_optimizer_step(j->ex, j->opt)) != OTC_OK)
            return s;
    }
    return OTC_OK;
}

otc_status pyotc_train_sequences(const pyotc_seq_train *j, double *losses) {
    otc_seq_loader *l = otc_seq_loader_new(j->d, j->batch, true, false, j->seed);
    float *weight = malloc(sizeof *weight * (size_t)j->bptt);
    otc_status s = l && weight ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory for training");
    long steps = j->d->data->rows;
    for (int e = 0; e < j->epochs && s == OTC_OK; e++) {
        double sum = 0;
        int T, B;
        const float *x, *y;
        while (s == OTC_OK && (B = otc_seq_loader_next(l, &T, &x, &y, NULL)) > 0)
            s = train_batch(j, T, B, x, y, weight, &sum);
        losses[e] = sum / (double)steps;
    }
    otc_seq_loader_free(l);
    free(weight);
    return s;
}
