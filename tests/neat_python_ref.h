/* neat-python 2.1's activations and aggregations (neat/activations.py, neat/aggregations.py,
 * neat/math_util.py) spelled in double precision, independently of otc's op spec: the
 * reference the op tests and the fixture tests check otc against. */
#ifndef OTC_TEST_NEAT_PYTHON_REF_H
#define OTC_TEST_NEAT_PYTHON_REF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline double np_clamp(double z, double lo, double hi) {
    return fmax(lo, fmin(hi, z));
}

/* neat-python's activation `name` at z; NAN for an unknown name. */
static inline double np_ref_act(const char *name, double z) {
    if (!strcmp(name, "sigmoid")) return 1.0 / (1.0 + exp(-np_clamp(5.0 * z, -60, 60)));
    if (!strcmp(name, "tanh")) return tanh(np_clamp(2.5 * z, -60, 60));
    if (!strcmp(name, "sin")) return sin(np_clamp(5.0 * z, -60, 60));
    if (!strcmp(name, "gauss")) {
        double c = np_clamp(z, -3.4, 3.4);
        return exp(-5.0 * c * c);
    }
    if (!strcmp(name, "relu")) return z > 0.0 ? z : 0.0;
    if (!strcmp(name, "elu")) return z > 0.0 ? z : exp(z) - 1;
    if (!strcmp(name, "lelu")) return z > 0.0 ? z : 0.005 * z;
    if (!strcmp(name, "selu")) {
        const double lam = 1.0507009873554804934193349852946;
        const double alpha = 1.6732632423543772848170429916717;
        return z > 0.0 ? lam * z : lam * alpha * (exp(z) - 1);
    }
    if (!strcmp(name, "softplus")) return 0.2 * log(1 + exp(np_clamp(5.0 * z, -60, 60)));
    if (!strcmp(name, "identity")) return z;
    if (!strcmp(name, "clamped")) return np_clamp(z, -1, 1);
    if (!strcmp(name, "inv")) return z == 0.0 ? 0.0 : 1.0 / z;
    if (!strcmp(name, "log")) return log(fmax(1e-7, z));
    if (!strcmp(name, "exp")) return exp(np_clamp(z, -60, 60));
    if (!strcmp(name, "abs")) return fabs(z);
    if (!strcmp(name, "hat")) return fmax(0.0, 1 - fabs(z));
    if (!strcmp(name, "square")) return z * z;
    if (!strcmp(name, "cube")) return z * z * z;
    return NAN;
}

static inline int np_ref_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* neat-python's aggregation `name` over x[0..n) (0 over none, 1 for product); NAN for an
 * unknown name. Sorts a copy for the median (n <= 256). */
static inline double np_ref_agg(const char *name, const double *x, int n) {
    if (!strcmp(name, "product")) {
        double p = 1.0;
        for (int i = 0; i < n; i++) p *= x[i];
        return p;
    }
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i];
    if (!strcmp(name, "sum")) return s;
    if (n == 0) return 0.0;
    if (!strcmp(name, "mean")) return s / n;
    double best = x[0];
    for (int i = 1; i < n; i++) {
        if (!strcmp(name, "max") && x[i] > best) best = x[i];
        if (!strcmp(name, "min") && x[i] < best) best = x[i];
        if (!strcmp(name, "maxabs") && fabs(x[i]) > fabs(best)) best = x[i];
    }
    if (!strcmp(name, "max") || !strcmp(name, "min") || !strcmp(name, "maxabs")) return best;
    if (!strcmp(name, "median")) {
        if (n <= 2) return s / n; /* median2: the mean of one or two */
        double v[256];
        if (n > 256) return NAN;
        memcpy(v, x, (size_t)n * sizeof *v);
        qsort(v, (size_t)n, sizeof *v, np_ref_cmp);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    }
    return NAN;
}

#endif
