/* Calibration: the float model runs on the calibration rows with the interpreter, and every
 * value's range (and each NEAT neuron's pre-activation and terms) is recorded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant_internal.h"

void otc_quant_widen(range *r, double x) {
    if (x < r->lo) r->lo = x;
    if (x > r->hi) r->hi = x;
}

int otc_quant_row_width(otc_shape s) {
    if (s.ndim < 1 || s.dim[0] != OTC_BATCH) return -1;
    int w = 1;
    for (int i = 1; i < s.ndim; i++) w *= s.dim[i];
    return w;
}

/* The float aggregation of a neuron's terms as otc/ops.h defines otc_agg, for calibration's
 * ranges of the terms' aggregate (the interpreter keeps it inside its neuron kernel). */
static double agg_float(int agg, const double *t, int k) {
    if (agg == OTC_AGG_PRODUCT) {
        double p = 1;
        for (int i = 0; i < k; i++) p *= t[i];
        return p;
    }
    if (k == 0) return 0;
    if (agg == OTC_AGG_MEDIAN) {
        double a = 0, b = 0;
        for (int r = 0; r < 2; r++) {
            int want = r ? k / 2 : (k - 1) / 2;
            for (int i = 0; i < k; i++) {
                int lt = 0, le = 0;
                for (int j = 0; j < k; j++) {
                    lt += t[j] < t[i];
                    le += t[j] <= t[i];
                }
                if (lt <= want && want < le) {
                    *(r ? &b : &a) = t[i];
                    break;
                }
            }
        }
        return (a + b) / 2;
    }
    double acc = agg == OTC_AGG_SUM || agg == OTC_AGG_MEAN ? 0 : t[0];
    for (int i = 0; i < k; i++) {
        if (agg == OTC_AGG_SUM || agg == OTC_AGG_MEAN)
            acc += t[i];
        else if (agg == OTC_AGG_MIN && t[i] < acc)
            acc = t[i];
        else if (agg == OTC_AGG_MAX && t[i] > acc)
            acc = t[i];
        else if (agg == OTC_AGG_MAXABS && fabs(t[i]) > fabs(acc))
            acc = t[i];
    }
    return agg == OTC_AGG_MEAN ? acc / k : acc;
}

/* The ranges of one forward's values (batch rows), neurons' pre-activations included. */
static otc_status collect(otc_graph *g, otc_executor *ex, int batch, node_stats *st,
                          double *terms) {
    int n = otc_graph_size(g);
    for (otc_id id = 0; id < n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        int w = otc_quant_row_width(nd->shape);
        if (w < 0 || nd->op == OTC_OP_PARAMETER) continue;
        const float *v;
        otc_status s = otc_exec_value(ex, id, &v, NULL);
        if (s) return s;
        for (size_t i = 0; i < (size_t)batch * (size_t)w; i++) otc_quant_widen(&st[id].v, v[i]);
        st[id].seen = true;
        if (nd->op != OTC_OP_NEURON) continue;
        int k = nd->n_inputs - 2;
        const float *wt = otc_graph_node(g, nd->inputs[0])->value->data;
        float bias = otc_graph_node(g, nd->inputs[1])->value->data[0];
        for (int r = 0; r < batch; r++) {
            for (int i = 0; i < k; i++) {
                const float *src;
                otc_id sid = nd->inputs[2 + i];
                if ((s = otc_exec_value(ex, sid, &src, NULL))) return s;
                int sw = otc_quant_row_width(otc_graph_node(g, sid)->shape);
                terms[i] = (double)wt[i] * src[(size_t)r * (size_t)sw + (size_t)nd->cols[i]];
                if (fabs(terms[i]) > st[id].tmax) st[id].tmax = fabs(terms[i]);
            }
            double agg = agg_float(nd->agg, terms, k);
            if (fabs(agg) > st[id].tmax) st[id].tmax = fabs(agg);
            otc_quant_widen(&st[id].pre, bias + (double)nd->scale * agg);
        }
    }
    return OTC_OK;
}

/* The data's own faults, before anything runs: width, non-finite cells, constant columns. */
otc_status otc_quant_check_data(const otc_graph *g, const otc_dataset *d, otc_id *input) {
    if (otc_graph_input_count(g) != 1)
        return otc_fail(OTC_ERR_ARG, "int8 quantisation takes a model with one input, not %d",
                        otc_graph_input_count(g));
    *input = otc_graph_input(g, 0);
    int w = otc_quant_row_width(otc_graph_node(g, *input)->shape);
    char lb[96];
    if (w < 0)
        return otc_fail(OTC_ERR_ARG, "input %s is not batched",
                        otc_graph_node_label(g, *input, lb, sizeof lb));
    if (d->n_features != w)
        return otc_fail(OTC_ERR_SHAPE,
                        "the calibration data has %d feature column(s); input %s takes %d",
                        d->n_features, otc_graph_node_label(g, *input, lb, sizeof lb), w);
    if (d->rows < 1) return otc_fail(OTC_ERR_ARG, "the calibration data has no rows");
    for (int c = 0; c < w; c++) {
        float lo = d->x[c], hi = d->x[c];
        for (int r = 0; r < d->rows; r++) {
            float x = d->x[(size_t)r * (size_t)w + (size_t)c];
            if (!isfinite(x))
                return otc_fail(OTC_ERR_ARG,
                                "calibration row %d (line %d), column %d is not a finite number",
                                r + 1, d->lines ? d->lines[r] : r + 1, c + 1);
            if (x < lo) lo = x;
            if (x > hi) hi = x;
        }
        /* A CSV feature that never varies was not calibrated: the rows do not cover what
         * the model will see. (Image pixels, from IDX files, may be constant: the border.) */
        if (lo == hi && d->rows > 1 && d->lines)
            return otc_fail(OTC_ERR_ARG,
                            "calibration column %d (%s) is constant (%g): its range is zero, so "
                            "the rows do not calibrate it; give rows that vary",
                            c + 1, d->feature_names ? d->feature_names[c] : "?", (double)lo);
    }
    return OTC_OK;
}

otc_status otc_quant_calibrate(otc_graph *g, const otc_dataset *d, otc_id input, node_stats *st) {
    int n = otc_graph_size(g), max_k = 1;
    for (otc_id id = 0; id < n; id++) {
        st[id].v.lo = st[id].pre.lo = INFINITY;
        st[id].v.hi = st[id].pre.hi = -INFINITY;
        if (otc_graph_node(g, id)->n_inputs > max_k) max_k = otc_graph_node(g, id)->n_inputs;
    }
    otc_exec_options eo = {.inference = true};
    otc_executor *ex = otc_interpreter_new(g, &eo);
    double *terms = malloc(sizeof *terms * (size_t)max_k);
    otc_status s = ex && terms ? OTC_OK : OTC_ERR_NOMEM;
    /* A recurrent model reads the rows as one sequence, a step each; others in chunks. */
    int chunk = otc_graph_is_recurrent(g) ? 1 : 256;
    for (int r = 0; !s && r < d->rows; r += chunk) {
        int b = d->rows - r < chunk ? d->rows - r : chunk;
        s = otc_exec_set_input(ex, input, d->x + (size_t)r * (size_t)d->n_features, b);
        if (!s) s = otc_exec_forward(ex);
        if (!s) s = collect(g, ex, b, st, terms);
    }
    free(terms);
    otc_exec_free(ex);
    return s;
}
