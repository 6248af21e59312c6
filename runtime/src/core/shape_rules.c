/* Shape rules: what shape each op produces from its inputs, and the errors (naming the nodes
 * and their shapes) when they do not fit. Called by otc_graph_add for every node built. */
#include "shape_rules.h"

#include "otc/limits.h"

/* Shape and label of input i of the node being built. */
#define IN(i)        (otc_graph_node(g, s->inputs[i])->shape)
#define LABEL(i)     otc_graph_node_label(g, s->inputs[(i)], lab[(i) % 2], sizeof lab[0])
#define SHAPE(sh, k) otc_shape_str((sh), shp[k], sizeof shp[0])

static const char *opname(const otc_node_spec *s) {
    return otc_op_get(s->op)->name;
}

static bool dims_valid(otc_shape sh, bool allow_batch) {
    if (sh.ndim < 0 || sh.ndim > OTC_MAX_DIMS) return false;
    for (int i = 0; i < sh.ndim; i++) {
        if (i == 0 && sh.dim[0] == OTC_BATCH && allow_batch) continue;
        if (sh.dim[i] <= 0 || sh.dim[i] > OTC_MAX_DIM) return false;
    }
    return true;
}

otc_status otc_shape_source(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char shp[1][64];
    bool input = s->op == OTC_OP_INPUT;
    if (!dims_valid(s->shape, input))
        return otc_fail(OTC_ERR_SHAPE, "%s%s%s: invalid shape %s%s", opname(s), s->name ? " " : "",
                        s->name ? s->name : "", SHAPE(s->shape, 0),
                        input ? "" : " (parameters have no batch dimension)");
    if (!input && s->shape.ndim > 0 && otc_shape_size(s->shape) > (1u << 28))
        return otc_fail(OTC_ERR_SHAPE, "parameter %s: %s is too large", s->name ? s->name : "",
                        SHAPE(s->shape, 0));
    *out = s->shape;
    return OTC_OK;
}

otc_status otc_shape_same(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    *out = IN(0);
    return OTC_OK;
}

otc_status otc_shape_binary(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[2][64];
    if (!otc_shape_equal(IN(0), IN(1)))
        return otc_fail(OTC_ERR_SHAPE,
                        "%s: shapes differ: %s %s vs %s %s (broadcast explicitly with "
                        "row_broadcast or scale)",
                        opname(s), LABEL(0), SHAPE(IN(0), 0), LABEL(1), SHAPE(IN(1), 1));
    *out = IN(0);
    return OTC_OK;
}

otc_status otc_shape_matmul(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[2][64];
    otc_shape a = IN(0), b = IN(1);
    if (a.ndim != 2 || b.ndim != 2 || otc_shape_is_batched(b) || a.dim[1] != b.dim[0])
        return otc_fail(OTC_ERR_SHAPE,
                        "matmul: %s %s x %s %s does not fit ([M,K] x [K,N], the right side "
                        "unbatched)",
                        LABEL(0), SHAPE(a, 0), LABEL(1), SHAPE(b, 1));
    *out = otc_shape_2d(a.dim[0], b.dim[1]);
    return OTC_OK;
}

otc_status otc_shape_row_broadcast(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[2][64];
    otc_shape v = IN(0), like = IN(1);
    bool ok = like.ndim >= 1 && v.ndim == like.ndim - 1 && !otc_shape_is_batched(v);
    for (int i = 0; ok && i < v.ndim; i++) ok = v.dim[i] == like.dim[i + 1];
    if (!ok)
        return otc_fail(OTC_ERR_SHAPE,
                        "row_broadcast: %s %s cannot be repeated over the rows of %s %s", LABEL(0),
                        SHAPE(v, 0), LABEL(1), SHAPE(like, 1));
    *out = like;
    return OTC_OK;
}

otc_status otc_shape_reduce(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    *out = otc_shape_scalar();
    return OTC_OK;
}

otc_status otc_shape_reshape(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[2][64];
    otc_shape x = IN(0), to = s->shape;
    bool batched = otc_shape_is_batched(x);
    if (!dims_valid(to, true) || otc_shape_is_batched(to) != batched ||
        otc_shape_size(to) != otc_shape_size(x))
        return otc_fail(OTC_ERR_SHAPE, "reshape: %s %s cannot become %s", LABEL(0), SHAPE(x, 0),
                        SHAPE(to, 1));
    *out = to;
    return OTC_OK;
}

otc_status otc_shape_flatten(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    otc_shape x = IN(0);
    int rest = 1;
    for (int i = 1; i < x.ndim; i++) rest *= x.dim[i];
    if (x.ndim == 0)
        *out = otc_shape_1d(1);
    else if (otc_shape_is_batched(x))
        *out = otc_shape_2d(OTC_BATCH, rest);
    else
        *out = otc_shape_1d((int)otc_shape_size(x));
    return OTC_OK;
}

/* An axis counted from the end when negative; -1 when out of range. */
static int norm_axis(int axis, int ndim) {
    if (axis < 0) axis += ndim;
    return axis >= 0 && axis < ndim ? axis : -1;
}

otc_status otc_shape_concat(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[2][64];
    otc_shape first = IN(0);
    int axis = norm_axis(s->axis, first.ndim);
    if (axis < 0 || (axis == 0 && otc_shape_is_batched(first)))
        return otc_fail(OTC_ERR_SHAPE, "concat: axis %d is not a non-batch axis of %s %s", s->axis,
                        LABEL(0), SHAPE(first, 0));
    otc_shape r = first;
    for (int i = 1; i < s->n_inputs; i++) {
        otc_shape x = IN(i);
        bool ok = x.ndim == first.ndim;
        for (int d = 0; ok && d < x.ndim; d++) ok = d == axis || x.dim[d] == first.dim[d];
        if (!ok)
            return otc_fail(OTC_ERR_SHAPE, "concat: %s %s does not fit %s %s along axis %d",
                            LABEL(i), SHAPE(x, 1), LABEL(0), SHAPE(first, 0), axis);
        r.dim[axis] += x.dim[axis];
    }
    *out = r;
    return OTC_OK;
}

static otc_status check_axis_range(const otc_graph *g, const otc_node_spec *s, int len,
                                   int *axis_out) {
    char lab[2][64], shp[2][64];
    otc_shape x = IN(0);
    int axis = norm_axis(s->axis, x.ndim);
    if (axis < 0 || (axis == 0 && otc_shape_is_batched(x)) || s->start < 0 || len < 1 ||
        s->start > x.dim[axis] - len)
        return otc_fail(OTC_ERR_SHAPE, "%s: axis %d, start %d, length %d is outside %s %s",
                        opname(s), s->axis, s->start, len, LABEL(0), SHAPE(x, 0));
    *axis_out = axis;
    return OTC_OK;
}

otc_status otc_shape_slice(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    int axis = 0;
    otc_status st = check_axis_range(g, s, s->len, &axis);
    if (st) return st;
    *out = IN(0);
    out->dim[axis] = s->len;
    return OTC_OK;
}

otc_status otc_shape_select(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    int axis = 0;
    otc_status st = check_axis_range(g, s, 1, &axis);
    if (st) return st;
    otc_shape x = IN(0), r = {0};
    for (int d = 0; d < x.ndim; d++)
        if (d != axis) r.dim[r.ndim++] = x.dim[d];
    *out = r;
    return OTC_OK;
}

otc_status otc_shape_softmax(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[2][64];
    otc_shape x = IN(0);
    if (x.ndim == 0 || (x.ndim == 1 && otc_shape_is_batched(x)))
        return otc_fail(OTC_ERR_SHAPE, "%s: %s %s has no class axis", opname(s), LABEL(0),
                        SHAPE(x, 0));
    *out = x;
    return OTC_OK;
}

otc_status otc_shape_loss(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[2][64];
    if (!otc_shape_equal(IN(0), IN(1)))
        return otc_fail(OTC_ERR_SHAPE, "%s: prediction %s %s and target %s %s differ", opname(s),
                        LABEL(0), SHAPE(IN(0), 0), LABEL(1), SHAPE(IN(1), 1));
    *out = otc_shape_scalar();
    return OTC_OK;
}

otc_status otc_shape_softmax_ce(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[2][64];
    otc_shape x = IN(0), y = IN(1);
    bool ok =
        x.ndim == 2 && (y.ndim == 1 || (y.ndim == 2 && y.dim[1] == 1)) && y.dim[0] == x.dim[0];
    if (!ok)
        return otc_fail(OTC_ERR_SHAPE,
                        "softmax_ce: logits %s %s and labels %s %s do not fit ([M,C] and [M] "
                        "or [M,1])",
                        LABEL(0), SHAPE(x, 0), LABEL(1), SHAPE(y, 1));
    *out = otc_shape_scalar();
    return OTC_OK;
}

otc_status otc_shape_neuron(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char lab[2][64], shp[2][64];
    int k = s->n_inputs - 2;
    otc_shape w = IN(0), b = IN(1);
    if (otc_graph_node(g, s->inputs[0])->op != OTC_OP_PARAMETER ||
        otc_graph_node(g, s->inputs[1])->op != OTC_OP_PARAMETER)
        return otc_fail(OTC_ERR_SHAPE, "neuron: weights %s and bias %s must be parameters",
                        LABEL(0), LABEL(1));
    /* A neuron with no sources keeps a 1-element (unused) weight parameter. */
    if (w.ndim != 1 || w.dim[0] != (k > 0 ? k : 1) || b.ndim != 1 || b.dim[0] != 1)
        return otc_fail(OTC_ERR_SHAPE,
                        "neuron: weights %s %s and bias %s %s do not fit %d source(s)", LABEL(0),
                        SHAPE(w, 0), LABEL(1), SHAPE(b, 1), k);
    if (s->act < 0 || s->act >= OTC_ACT_COUNT)
        return otc_fail(OTC_ERR_ARG, "neuron: unknown activation %d", s->act);
    if (!otc_agg_name(s->agg))
        return otc_fail(OTC_ERR_ARG, "neuron: unknown aggregation %d", s->agg);
    if (k > 0 && !s->cols) return otc_fail(OTC_ERR_ARG, "neuron: no source columns given");
    for (int i = 0; i < k; i++) {
        otc_shape x = IN(2 + i);
        if (x.ndim != 2 || !otc_shape_is_batched(x) || s->cols[i] < 0 || s->cols[i] >= x.dim[1])
            return otc_fail(OTC_ERR_SHAPE,
                            "neuron: source %d %s %s has no column %d (sources are [B,n])", i,
                            LABEL(0 + 2 + i), SHAPE(x, 0), s->cols[i]);
    }
    *out = otc_shape_2d(OTC_BATCH, 1);
    return OTC_OK;
}

otc_status otc_shape_delay(const otc_graph *g, const otc_node_spec *s, otc_shape *out) {
    char shp[2][64];
    if (!dims_valid(s->shape, true))
        return otc_fail(OTC_ERR_SHAPE, "delay: invalid shape %s", SHAPE(s->shape, 0));
    /* The input may be the delay itself (not connected yet); it is checked when connected. */
    *out = s->shape;
    return OTC_OK;
}
