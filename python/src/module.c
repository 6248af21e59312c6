/* The _otc extension module: its exception, shared argument checks, and the types. */
#define PYOTC_IMPORT_ARRAY
#include "pyotc.h"

PyObject *pyotc_error;

PyObject *pyotc_fail(void) {
    const char *msg = otc_last_error();
    PyErr_SetString(pyotc_error, msg && *msg ? msg : "otc call failed");
    return NULL;
}

PyArrayObject *pyotc_float_array(PyObject *obj, const char *what, int ndim) {
    if (PyArray_Check(obj)) {
        /* Numbers only: numpy would turn strings into floats or fail with a vaguer message. */
        char kind = PyArray_DESCR((PyArrayObject *)obj)->kind;
        if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') {
            PyErr_Format(PyExc_TypeError, "%s: expected a numeric array, got dtype %S", what,
                         (PyObject *)PyArray_DESCR((PyArrayObject *)obj));
            return NULL;
        }
    }
    PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OTF(obj, NPY_FLOAT32,
                                                         NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
    if (!a) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_Format(PyExc_TypeError, "%s: cannot be read as a float32 array (%S)", what,
                     value ? value : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return NULL;
    }
    if (ndim >= 0 && PyArray_NDIM(a) != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: expected a %d-D array, got %d-D", what, ndim,
                     PyArray_NDIM(a));
        Py_DECREF(a);
        return NULL;
    }
    for (int i = 0; i < PyArray_NDIM(a); i++) {
        if (PyArray_DIM(a, i) > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "%s: dimension %d is too large", what, i);
            Py_DECREF(a);
            return NULL;
        }
    }
    return a;
}

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_otc",
                                    "otc's runtime, compiler and NEAT (C extension).", -1, NULL};

PyMODINIT_FUNC PyInit__otc(void) {
    import_array();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    pyotc_error = PyErr_NewExceptionWithDoc(
        "otc.OtcError", "An otc call failed; the message is otc's own.", PyExc_RuntimeError, NULL);
    if (!pyotc_error || PyModule_AddObjectRef(m, "OtcError", pyotc_error) < 0 ||
        pyotc_add_model(m) < 0 || pyotc_add_neat_config(m) < 0 || pyotc_add_genome(m) < 0 ||
        pyotc_add_population(m) < 0 || pyotc_add_network(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
