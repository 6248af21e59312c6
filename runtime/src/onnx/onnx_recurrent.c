/* ONNX RNN, LSTM and GRU (forward, one layer, PyTorch's export) as otc's own recurrent layers
 * (otc/layers.h): the ONNX graph runs over a whole sequence, the otc graph is one time step
 * whose Delay nodes carry h (and c). Values that have a time axis in the file carry it as a
 * tag (ox_value.time) and have none in the graph; only the ops below and per-step
 * (elementwise, MatMul) ops may read them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"
#include "otc/layers.h"
#include "otc/rng.h"

#define TRY(e)                                                                                     \
    do {                                                                                           \
        otc_status st_ = (e);                                                                      \
        if (st_) return st_;                                                                       \
    } while (0)

bool ox_is_recurrent(const char *op) {
    return op && (!strcmp(op, "RNN") || !strcmp(op, "LSTM") || !strcmp(op, "GRU"));
}

/* The current node's direction: forward, or refused. */
static otc_status forward_only(ox_ctx *x) {
    char dir[32];
    otc_status st = ox_attr_str(x, "direction", "forward", dir, sizeof dir);
    if (!st && strcmp(dir, "forward"))
        st = ox_fail(x, OTC_ERR_UNSUPPORTED, "direction=%s is not supported (forward only)", dir);
    return st;
}

otc_status ox_recurrent_directions(ox_ctx *x) {
    otc_status st = OTC_OK;
    for (size_t i = 0; i < x->gp->n_node && !st; i++) {
        if (!ox_is_recurrent(x->gp->node[i]->op_type)) continue;
        x->node = x->gp->node[i];
        x->node_index = (int)i;
        st = forward_only(x);
    }
    x->node = NULL;
    return st;
}

/* The node whose first output is name, or NULL. */
static const Onnx__NodeProto *producer(const Onnx__GraphProto *gp, const char *name) {
    for (size_t i = 0; i < gp->n_node; i++)
        if (gp->node[i]->n_output && !strcmp(gp->node[i]->output[0], name)) return gp->node[i];
    return NULL;
}

int ox_input_time_axis(const Onnx__GraphProto *gp, const char *input) {
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        if (!ox_is_recurrent(nd->op_type) || nd->n_input < 1) continue;
        int time = 0;
        for (size_t k = 0; k < nd->n_attribute; k++)
            if (nd->attribute[k]->name && !strcmp(nd->attribute[k]->name, "layout") &&
                nd->attribute[k]->i == 1)
                time = 1;
        const char *name = nd->input[0];
        /* Back through Transposes (a few: the exporter's batch_first wrapper) to an input. */
        for (int hops = 0; hops < 8; hops++) {
            if (!strcmp(name, input)) return time;
            const Onnx__NodeProto *p = producer(gp, name);
            if (!p || !p->op_type || strcmp(p->op_type, "Transpose") || p->n_input < 1) break;
            const Onnx__AttributeProto *perm = NULL;
            for (size_t k = 0; k < p->n_attribute; k++)
                if (p->attribute[k]->name && !strcmp(p->attribute[k]->name, "perm"))
                    perm = p->attribute[k];
            if (!perm || perm->n_ints != 3 || time >= 3 || perm->ints[time] < 0 ||
                perm->ints[time] > 2)
                break;
            time = (int)perm->ints[time];
            name = p->input[0];
        }
    }
    return -1;
}

/* ONNX gate blocks in PyTorch's order: LSTM iofc -> ifgo, GRU zrh -> rzn. */
static const int lstm_order[4] = {0, 2, 3, 1}, gru_order[3] = {1, 0, 2}, rnn_order[1] = {0};

/* rows [gates*H, cols] of src (ONNX gate order) into dst in PyTorch's order. */
static void regate(const float *src, float *dst, int gates, const int *order, int H, int cols) {
    for (int gt = 0; gt < gates; gt++)
        memcpy(dst + (size_t)gt * H * cols, src + (size_t)order[gt] * H * cols,
               (size_t)H * cols * sizeof *dst);
}

/* A zero initial state (absent, or a constant of zeros) is otc's Delay start; others are not. */
static otc_status zero_state(ox_ctx *x, int i, const char *what) {
    ox_value *v = ox_in(x, i);
    if (!v) return OTC_OK;
    bool zero = v->c != NULL;
    for (size_t k = 0; zero && k < v->c->n; k++) zero = ox_const_get(v->c, k) == 0;
    if (!zero)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "%s must be absent or zeros (otc's state starts at zero; set it with the "
                       "executor)",
                       what);
    return OTC_OK;
}

static otc_status check_acts(ox_ctx *x, int n, const char *const *want) {
    const Onnx__AttributeProto *a = ox_attr(x, "activations");
    if (!a) return OTC_OK;
    bool ok = (int)a->n_strings == n;
    for (int k = 0; ok && k < n; k++)
        ok = a->strings[k].len == strlen(want[k]) &&
             !memcmp(a->strings[k].data, want[k], a->strings[k].len);
    return ok ? OTC_OK
              : ox_fail(x, OTC_ERR_UNSUPPORTED, "activations other than the defaults (%s...)",
                        want[0]);
}

static otc_status op_recurrent(ox_ctx *x) {
    const char *op = x->node->op_type;
    otc_cell cell = !strcmp(op, "LSTM")  ? OTC_CELL_LSTM
                    : !strcmp(op, "GRU") ? OTC_CELL_GRU
                                         : OTC_CELL_RNN;
    int G = otc_cell_gates(cell);
    const int *order = cell == OTC_CELL_LSTM  ? lstm_order
                       : cell == OTC_CELL_GRU ? gru_order
                                              : rnn_order;
    ox_value *xv, *wv, *rv, *bv = ox_in(x, 3);
    TRY(ox_need(x, 0, &xv));
    TRY(ox_need(x, 1, &wv));
    TRY(ox_need(x, 2, &rv));
    int64_t H, layout = 0, lbr = 0;
    TRY(ox_attr_int(x, "hidden_size", 0, &H));
    if (x->opset >= 14) TRY(ox_attr_int(x, "layout", 0, &layout));
    TRY(forward_only(x));
    if (ox_attr(x, "clip")) return ox_fail(x, OTC_ERR_UNSUPPORTED, "clip");
    if (cell == OTC_CELL_GRU) {
        TRY(ox_attr_int(x, "linear_before_reset", 0, &lbr));
        if (lbr != 1)
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "linear_before_reset=0 (otc's GRU is PyTorch's, linear_before_reset=1)");
    }
    if (cell == OTC_CELL_LSTM) {
        int64_t ifg = 0;
        TRY(ox_attr_int(x, "input_forget", 0, &ifg));
        if (ifg) return ox_fail(x, OTC_ERR_UNSUPPORTED, "input_forget=1");
        static const char *const d[] = {"Sigmoid", "Tanh", "Tanh"};
        TRY(check_acts(x, 3, d));
        if (ox_in(x, 7)) return ox_fail(x, OTC_ERR_UNSUPPORTED, "peepholes (P)");
        TRY(zero_state(x, 6, "initial_c"));
    } else if (cell == OTC_CELL_GRU) {
        static const char *const d[] = {"Sigmoid", "Tanh"};
        TRY(check_acts(x, 2, d));
    } else {
        static const char *const d[] = {"Tanh"};
        TRY(check_acts(x, 1, d));
    }
    if (ox_in(x, 4))
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "sequence_lens (every sequence runs to its end)");
    TRY(zero_state(x, 5, "initial_h"));
    if (xv->c || xv->time != (layout ? 1 : 0) || xv->dir >= 0)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "X must be a graph input's sequence (its time axis %s)",
                       layout ? "second" : "first");
    const otc_shape xs = otc_graph_node(x->g, xv->id)->shape;
    if (xs.ndim != 2) return ox_fail(x, OTC_ERR_UNSUPPORTED, "X must be [time, batch, input]");
    int I = xs.dim[1];
    if (H < 1 || H > (1 << 16)) return ox_fail(x, OTC_ERR_FORMAT, "hidden_size %lld", (long long)H);
    bool ok = wv->c && wv->c->f && wv->c->rank == 3 && wv->c->dim[0] == 1 &&
              wv->c->dim[1] == G * H && wv->c->dim[2] == I && rv->c && rv->c->f &&
              rv->c->rank == 3 && rv->c->dim[0] == 1 && rv->c->dim[1] == G * H &&
              rv->c->dim[2] == H && (!bv || (bv->c && bv->c->f && bv->c->n == (size_t)(2 * G * H)));
    if (!ok)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "W [1,%lld,%d], R [1,%lld,%lld] and B [1,%lld] must be constant floats",
                       (long long)(G * H), I, (long long)(G * H), (long long)H,
                       (long long)(2 * G * H));
    /* The layer's parameters are named "<node>.weight_ih_l0" ... as PyTorch's state_dict. */
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%.200s",
             x->node->name && *x->node->name ? x->node->name : x->node->output[0]);
    otc_rng rng;
    otc_rng_seed(&rng, 1);
    otc_id h = otc_recurrent(x->g, cell, xv->id, (int)H, 1, &rng, prefix);
    TRY(ox_built(x, h));
    size_t nw = (size_t)(G * H) * (size_t)(I > H ? I : H);
    float *buf = malloc(nw * sizeof *buf);
    if (!buf) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    otc_status st;
    regate(wv->c->f, buf, G, order, (int)H, I);
    st = otc_recurrent_load_torch(x->g, prefix, "weight_ih_l0", buf, (size_t)(G * H * I));
    regate(rv->c->f, buf, G, order, (int)H, (int)H);
    if (!st) st = otc_recurrent_load_torch(x->g, prefix, "weight_hh_l0", buf, (size_t)(G * H * H));
    for (int half = 0; half < 2 && !st; half++) {
        if (bv)
            regate(bv->c->f + half * G * H, buf, G, order, (int)H, 1);
        else
            memset(buf, 0, (size_t)(G * H) * sizeof *buf);
        st = otc_recurrent_load_torch(x->g, prefix, half ? "bias_hh_l0" : "bias_ih_l0", buf,
                                      (size_t)(G * H));
    }
    free(buf);
    if (st) return ox_built(x, -1);
    /* Y [T, 1, B, H] (layout 1: [B, T, 1, H]): h per step, with a directions axis to squeeze;
     * Y_h [1, B, H]: the last step's h, read at a sequence's last row; Y_c alike for c. */
    TRY(ox_set_node(x, 0, h));
    ox_value *y = ox_out(x, 0);
    if (y) {
        y->time = layout ? 1 : 0;
        y->dir = layout ? 2 : 1;
    }
    TRY(ox_set_node(x, 1, h));
    if ((y = ox_out(x, 1))) y->dir = layout ? 1 : 0;
    if (cell == OTC_CELL_LSTM && ox_out(x, 2)) {
        char name[300];
        snprintf(name, sizeof name, "%s.c_l0", prefix);
        otc_id c = otc_graph_find(x->g, name);
        if (c < 0) return ox_fail(x, OTC_ERR_UNSUPPORTED, "no cell state");
        TRY(ox_set_node(x, 2, otc_graph_node(x->g, c)->inputs[0]));
        ox_out(x, 2)->dir = layout ? 1 : 0;
    }
    return OTC_OK;
}

/* The full ONNX rank of v (its graph rank plus the time and directions axes it carries). */
static int full_rank(const ox_ctx *x, const ox_value *v) {
    return otc_graph_node(x->g, v->id)->shape.ndim + (v->time >= 0) + (v->dir >= 0);
}

/* The graph axis of ONNX axis a of v, or -1 for its time or directions axis. */
static int graph_axis(const ox_value *v, int a) {
    if (a == v->time || a == v->dir) return -1;
    return a - (v->time >= 0 && v->time < a) - (v->dir >= 0 && v->dir < a);
}

/* After dropping ONNX axis a: where the time / directions axis goes. */
static int after_drop(int pos, int a) {
    return pos < 0 ? -1 : pos > a ? pos - 1 : pos;
}

static otc_status tagged_out(ox_ctx *x, int i, otc_id id, int time, int dir) {
    TRY(ox_set_node(x, i, id));
    ox_value *o = ox_out(x, i);
    if (o) {
        o->time = time;
        o->dir = dir;
    }
    return OTC_OK;
}

/* Squeeze, or Gather of index 0 (or -1) along a size-1 axis: the directions axis goes. */
static otc_status drop_dir(ox_ctx *x, ox_value *v, int a) {
    if (a != v->dir || v->n_stack > 1)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "only the directions axis of a recurrent output may be removed");
    return tagged_out(x, 0, v->id, after_drop(v->time, a), -1);
}

/* Concat along axis 0 of stacked layers' Y_h (or Y_c), [1, B, H] each, as PyTorch's h_n:
 * kept as the list of the layers' nodes for a Gather to pick one. */
static otc_status stack_layers(ox_ctx *x) {
    int64_t axis;
    int n = (int)x->node->n_input;
    TRY(ox_attr_int(x, "axis", 0, &axis));
    if (axis != 0 || n < 1 || n > OX_MAX_ATTR_INTS)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "concatenation of sequences (only recurrent "
                       "layers' final states along axis 0 are read)");
    otc_id *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n; k++) {
        ox_value *in = ox_in(x, k);
        if (!in || in->c || in->dir != 0 || in->time >= 0 || in->stack) {
            free(ids);
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "concatenation of sequences (only recurrent layers' final states "
                           "along axis 0 are read)");
        }
        ids[k] = in->id;
    }
    otc_status st = ox_set_node(x, 0, ids[0]);
    ox_value *o = ox_out(x, 0);
    if (st || !o) {
        free(ids);
        return st;
    }
    o->stack = ids;
    o->n_stack = n;
    o->dir = 0;
    return OTC_OK;
}

otc_status ox_op_on_sequence(ox_ctx *x, ox_handler plain) {
    const char *op = x->node->op_type;
    ox_value *v = ox_in(x, 0);
    if (ox_is_recurrent(op)) return op_recurrent(x);
    int time = -1;
    if (!strcmp(op, "Concat")) return stack_layers(x);
    for (size_t k = 0; k < x->node->n_input; k++) {
        ox_value *in = ox_in(x, (int)k);
        if (in && in->dir >= 0 && strcmp(op, "Squeeze") && strcmp(op, "Gather"))
            return ox_fail(x, OTC_ERR_UNSUPPORTED,
                           "a recurrent output read before its directions axis is squeezed");
        if (in && in->time >= 0) {
            if (time >= 0 && in->time != time)
                return ox_fail(x, OTC_ERR_UNSUPPORTED, "sequences with different time axes");
            time = in->time;
        }
    }
    bool first = v && !v->c && (v->time >= 0 || v->dir >= 0);
    int R = first ? full_rank(x, v) : 0;
    if (!first && (!strcmp(op, "Shape") || !strcmp(op, "Squeeze") || !strcmp(op, "Gather") ||
                   !strcmp(op, "Transpose")))
        return ox_fail(x, OTC_ERR_UNSUPPORTED, "a sequence as a later input");
    if (!strcmp(op, "Shape") && x->opset < 15) {
        int64_t n = R, gd[OX_MAX_RANK];
        ox_const *c = ox_const_new(1, &n, true);
        if (!c) return ox_fail(x, OTC_ERR_NOMEM, "out of memory");
        ox_dims(x, v, gd);
        for (int a = 0; a < R; a++)
            c->i[a] = a == v->time ? OX_TIME : a == v->dir ? 1 : gd[graph_axis(v, a)];
        return ox_set_const(x, 0, c);
    }
    if (!strcmp(op, "Squeeze")) {
        int64_t axis = -1;
        if (x->opset < 13) {
            int n;
            const int64_t *a;
            TRY(ox_attr_ints(x, "axes", &n, &a));
            if (n == 1) axis = a[0];
        } else if (ox_in(x, 1) && ox_in(x, 1)->c && ox_in(x, 1)->c->n == 1) {
            axis = ox_const_int(ox_in(x, 1)->c, 0);
        }
        if (axis < 0) axis += R;
        if (axis < 0 || axis >= R)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "squeeze of a sequence needs one axis");
        return drop_dir(x, v, (int)axis);
    }
    if (!strcmp(op, "Gather")) {
        int64_t axis;
        ox_value *iv = ox_in(x, 1);
        TRY(ox_attr_int(x, "axis", 0, &axis));
        if (axis < 0) axis += R;
        if (!iv || !iv->c || iv->c->n != 1 || iv->c->rank != 0)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "gather from a sequence with a scalar index");
        int64_t idx = ox_const_int(iv->c, 0);
        if (v->stack && axis == 0) { /* one layer's final state */
            if (idx < 0) idx += v->n_stack;
            if (idx < 0 || idx >= v->n_stack)
                return ox_fail(x, OTC_ERR_FORMAT, "layer %lld of %d", (long long)idx, v->n_stack);
            return ox_set_node(x, 0, v->stack[idx]);
        }
        if (axis == v->dir && (idx == 0 || idx == -1)) return drop_dir(x, v, (int)axis);
        if (axis == v->time && idx == -1) /* the last step: the value at the last row */
            return tagged_out(x, 0, v->id, -1, after_drop(v->dir, (int)axis));
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "gather from a sequence other than its last step ([-1] on the time axis)");
    }
    if (!strcmp(op, "Transpose")) {
        int n;
        const int64_t *p;
        TRY(ox_attr_ints(x, "perm", &n, &p));
        if (n != R || v->dir >= 0)
            return ox_fail(x, OTC_ERR_UNSUPPORTED, "transpose of a sequence needs its perm");
        /* The time axis may move anywhere; the other axes must keep the batch first and
         * their order (no data moves in the step graph). */
        int nt = -1, last = -1;
        for (int d = 0; d < R; d++) {
            if (p[d] < 0 || p[d] >= R) return ox_fail(x, OTC_ERR_FORMAT, "perm");
            if (p[d] == v->time) {
                nt = d;
                continue;
            }
            int ga = graph_axis(v, (int)p[d]);
            if (ga < last)
                return ox_fail(x, OTC_ERR_UNSUPPORTED,
                               "a transpose of a sequence that moves data within a step");
            last = ga;
        }
        return tagged_out(x, 0, v->id, nt, -1);
    }
    /* Per-step ops: the same op on each step's value. */
    static const char *const per_step[] = {
        "Add",     "Sub",         "Mul",       "Div",     "Relu",     "LeakyRelu", "Elu", "Selu",
        "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",    "Softplus", "Clip",      "Exp", "Log",
        "Abs",     "Neg",         "Identity",  "Dropout", "MatMul",   "Cast"};
    bool ok = false;
    for (size_t k = 0; k < sizeof per_step / sizeof per_step[0]; k++)
        ok = ok || !strcmp(op, per_step[k]);
    if ((!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax"))) {
        int64_t axis;
        TRY(ox_attr_int(x, "axis", x->opset < 13 ? 1 : -1, &axis));
        ok = axis == -1; /* the last axis, counted as the step graph counts it */
    }
    if (!ok || !plain)
        return ox_fail(x, OTC_ERR_UNSUPPORTED,
                       "this op on a sequence (otc runs sequences a step at a time: per-step "
                       "ops, the recurrent ops, Transpose, Squeeze and the last step are read)");
    TRY(plain(x));
    ox_value *o = ox_out(x, 0);
    if (o && !o->c) o->time = time;
    return OTC_OK;
}
