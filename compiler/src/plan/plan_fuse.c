/* Fusion: nodes in evaluation order grouped into kernels (one loop nest each), the forward
 * steps, and which values never leave their kernel's loop body. */
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

/* The (elements, batched) loop a map op runs over: its own value's, except a Neuron, whose
 * [B,1] value is one element per sample anyway. */
static void loop_of(const otc_plan *p, otc_id id, int64_t *n, bool *batched) {
    *n = p->values[id].size;
    *batched = p->values[id].batched;
}

/* Elementwise over its loop space: a map op, or a slice read at an offset. */
static bool map_member(const otc_plan *p, otc_id id) {
    return otc_plan_is_map_op(otc_graph_node(p->graph, id)->op) || otc_plan_slice_as_map(p, id);
}

static otc_kernel_kind kind_for(const otc_plan *p, otc_id id) {
    const otc_node *nd = otc_graph_node(p->graph, id);
    if (map_member(p, id)) return OTC_KERNEL_MAP;
    if (nd->op == OTC_OP_MATMUL && p->values[otc_plan_owner(p, nd->inputs[0])].batched)
        return OTC_KERNEL_MATMUL;
    return OTC_KERNEL_OP;
}

/* Does the node's math call the math library (exp, tanh, sin, ...; abs and max are single
 * instructions)? With options.split_libm such code keeps to loops of its own. */
static bool calls_libm(const otc_graph *g, otc_id id) {
    const otc_node *nd = otc_graph_node(g, id);
    if (nd->op == OTC_OP_NEURON) return otc_expr_calls_math(otc_act_get((otc_act)nd->act)->f);
    return otc_expr_calls_math(otc_op_map_expr(nd->op));
}

static bool kernel_calls_libm(const otc_plan *p, int k) {
    const otc_plan_kernel *K = &p->kernels[k];
    for (int m = 0; m < K->count; m++)
        if (calls_libm(p->graph, p->members[K->first + m])) return true;
    return false;
}

int64_t otc_plan_member_cost(const otc_graph *g, otc_id id) {
    /* A call into the math library is a polynomial with range reduction, inlined. */
    enum { MATH_CALL = 6 };
    return 1 + otc_graph_node(g, id)->n_inputs + (calls_libm(g, id) ? MATH_CALL : 0);
}

/* The code one fused kernel may hold, in otc_plan_member_cost's units. A kernel is one loop
 * body, a single basic block to the C compiler and LLVM, whose passes (partial redundancy
 * elimination, value numbering, scheduling, register allocation) grow faster than linearly in
 * a block's length: gcc -O2 took 20 s on one kernel of 256 fused tanh neurons (3.6 s at 100,
 * 14 s at 200), LLVM minutes on a 2,000-neuron chain fused whole. At this size (a dozen tanh
 * neurons, sixty additions) a kernel compiles in milliseconds, and a value crossing into the
 * next kernel costs one store and one load per sample, nothing next to the members' work. */
enum { KERNEL_MAX_COST = 128 };

static int64_t kernel_cost(const otc_plan *p, const otc_plan_kernel *K) {
    int64_t n = 0;
    for (int m = 0; m < K->count; m++)
        n += otc_plan_member_cost(p->graph, p->members[K->first + m]);
    return n;
}

/* May `id` run inside the open kernel k, in the same loop body after its members? */
static bool can_join(const otc_plan_ctx *c, int k, otc_id id) {
    const otc_plan *p = c->p;
    const otc_plan_kernel *K = &p->kernels[k];
    const otc_node *nd = otc_graph_node(p->graph, id);
    if (K->kind == OTC_KERNEL_OP || p->options.fuse == OTC_FUSE_NONE) return false;
    if (!map_member(p, id)) return false;
    if (kernel_cost(p, K) + otc_plan_member_cost(p->graph, id) > KERNEL_MAX_COST) return false;
    int64_t n;
    bool batched;
    loop_of(p, id, &n, &batched);
    if (n != K->n || batched != K->batched) return false;
    /* Split: code the C compiler can vectorise across the batch stays apart from libm calls,
     * one of which keeps a whole loop scalar. */
    if (p->options.split_libm && calls_libm(p->graph, id) != kernel_calls_libm(p, k)) return false;
    if (p->options.fuse == OTC_FUSE_LOOPS) return true;
    /* A broadcast bias reads no computed value: it rides along with whatever it will be
     * added to (MatMul -> + bias -> ReLU is one kernel). */
    if (nd->op == OTC_OP_ROW_BROADCAST) return true;
    /* Chains: it reads a member that nothing else reads. */
    for (int s = 0; s < nd->n_inputs; s++) {
        if (!otc_plan_reads_input(p->graph, id, s)) continue;
        otc_id o = otc_plan_owner(p, nd->inputs[s]);
        if (p->values[o].kernel == k && c->readers[o] == 1 && !c->external[o]) return true;
    }
    return false;
}

static otc_status close_kernel(otc_plan_ctx *c, int *open) {
    if (*open < 0) return OTC_OK;
    otc_plan_kernel *K = &c->p->kernels[*open];
    K->step = c->p->n_steps;
    if (K->kind == OTC_KERNEL_MATMUL) otc_plan_choose_tiling(c->p, K);
    otc_plan_step s = {OTC_STEP_KERNEL, c->p->members[K->first], *open, -1, 0, 0, 0, 0};
    *open = -1;
    return otc_plan_add_step(c, s);
}

static int io_of(const otc_plan *p, otc_id id, otc_io_stream stream) {
    for (int i = 0; i < p->n_io; i++)
        if (p->io[i].node == id && (p->io[i].stream == OTC_IO_OUT) == (stream == OTC_IO_OUT))
            return i;
    return -1;
}

/* The state copies, after everything that reads the old state. A Delay whose source is
 * another Delay reads that one's old value, so a Delay's slot is written only once every
 * Delay reading it has been copied; Delays reading only each other in a ring would need a
 * temporary and are refused. A Delay left unconnected (its own source) stays zero. */
static otc_status state_steps(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    const otc_graph *g = p->graph;
    int left = 0;
    bool *done = calloc((size_t)c->n + 1, sizeof *done);
    if (!done) return otc_fail(OTC_ERR_NOMEM, "out of memory for a plan");
    for (int i = 0; i < c->n_order; i++) {
        const otc_node *nd = otc_graph_node(g, c->order[i]);
        if (nd->op != OTC_OP_DELAY) continue;
        if (nd->inputs[0] == c->order[i])
            done[c->order[i]] = true;
        else
            left++;
    }
    otc_status st = OTC_OK;
    while (left > 0 && !st) {
        int copied = 0;
        for (int i = 0; i < c->n_order && !st; i++) {
            otc_id d = c->order[i];
            if (otc_graph_node(g, d)->op != OTC_OP_DELAY || done[d]) continue;
            bool read_later = false; /* a Delay still to copy reads d's old value */
            for (int j = 0; j < c->n_order && !read_later; j++) {
                otc_id e = c->order[j];
                const otc_node *ne = otc_graph_node(g, e);
                read_later = ne->op == OTC_OP_DELAY && !done[e] && e != d &&
                             otc_plan_owner(p, ne->inputs[0]) == d;
            }
            if (read_later) continue;
            done[d] = true;
            left--;
            copied++;
            otc_plan_step s = {OTC_STEP_STATE, d, -1, -1, 0, 0, 0, 0};
            st = otc_plan_add_step(c, s);
        }
        if (!st && copied == 0) {
            char lab[64];
            for (int i = 0; i < c->n_order; i++)
                if (otc_graph_node(g, c->order[i])->op == OTC_OP_DELAY && !done[c->order[i]]) {
                    otc_plan_label(g, c->order[i], lab);
                    break;
                }
            st = otc_fail(OTC_ERR_UNSUPPORTED,
                          "compiler: delay %s is in a ring of delays that read only each other "
                          "(no computed node between them); the compiler cannot order it",
                          lab);
        }
    }
    free(done);
    return st;
}

/* Adds computed node id to the open kernel, or closes it and opens one. */
static otc_status add_member(otc_plan_ctx *c, otc_id id, int *open) {
    otc_plan *p = c->p;
    otc_plan_value *v = &p->values[id];
    if (*open < 0 || !can_join(c, *open, id)) {
        otc_status st = close_kernel(c, open);
        if (st) return st;
        *open = p->n_kernels++;
        otc_plan_kernel *K = &p->kernels[*open];
        K->kind = kind_for(p, id);
        K->first = p->n_members;
        K->count = 0;
        K->tiling = (otc_plan_tiling){0, 0, 0, 0, false};
        loop_of(p, id, &K->n, &K->batched);
        if (K->kind == OTC_KERNEL_OP) K->n = v->size;
    }
    p->members[p->n_members++] = id;
    p->kernels[*open].count++;
    v->kernel = *open;
    return p->kernels[*open].kind == OTC_KERNEL_OP ? close_kernel(c, open) : OTC_OK;
}

/* Places node id. A slice run as a map member waits (deferred) until its first reader is
 * placed, and is placed right before it, in its kernel when the loop spaces match: a
 * topological order puts a slice next to its input, where it would be a copy kernel of its
 * own (a GRU's gate slices, between its two products). A deferred slice may read another:
 * each input's chain of them (a slice has one input) is gathered into chain[] and placed
 * deepest first, without recursion, as a model may chain any number of slices. */
static otc_status place(otc_plan_ctx *c, otc_id id, int *open, bool *deferred, otc_id *chain) {
    otc_plan *p = c->p;
    const otc_node *nd = otc_graph_node(p->graph, id);
    otc_status st = OTC_OK;
    for (int s = 0; s < nd->n_inputs && !st; s++) {
        if (!otc_plan_reads_input(p->graph, id, s)) continue;
        int n = 0;
        for (otc_id o = otc_plan_owner(p, nd->inputs[s]); deferred[o];
             o = otc_plan_owner(p, otc_graph_node(p->graph, o)->inputs[0])) {
            deferred[o] = false;
            chain[n++] = o;
        }
        while (n > 0 && !st) st = add_member(c, chain[--n], open);
    }
    return st ? st : add_member(c, id, open);
}

otc_status otc_plan_fuse(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    p->members = malloc(((size_t)c->n_order + 1) * sizeof *p->members);
    p->kernels = malloc(((size_t)c->n_order + 1) * sizeof *p->kernels);
    bool *deferred = calloc((size_t)c->n + 1, sizeof *deferred);
    otc_id *chain = malloc(((size_t)c->n + 1) * sizeof *chain);
    if (!p->members || !p->kernels || !deferred || !chain) {
        free(deferred);
        free(chain);
        return otc_fail(OTC_ERR_NOMEM, "out of memory for a plan");
    }
    int open = -1;
    otc_status st = OTC_OK;
    for (int i = 0; i < c->n_order && !st; i++) {
        otc_id id = c->order[i];
        const otc_node *nd = otc_graph_node(p->graph, id);
        otc_plan_value *v = &p->values[id];
        if (nd->op == OTC_OP_INPUT && v->direct) { /* written by the caller before the step */
            v->first_step = 0;
            continue;
        }
        if (nd->op == OTC_OP_INPUT) {
            /* Loaded before the open kernel's step, which is added when it closes. */
            v->first_step = p->n_steps;
            otc_plan_step s = {OTC_STEP_LOAD, id, -1, io_of(p, id, OTC_IO_IN), 0, 0, 0, 0};
            st = otc_plan_add_step(c, s);
            continue;
        }
        if (nd->op == OTC_OP_DELAY) { /* a state slot: read from the first step, no kernel */
            v->first_step = 0;
            continue;
        }
        if (v->storage != OTC_STORE_WORK) continue; /* parameters, aliases */
        if (otc_plan_slice_as_map(p, id))
            deferred[id] = true;
        else
            st = place(c, id, &open, deferred, chain);
    }
    /* Slices no computed node reads (outputs, a Delay's source). */
    for (int i = 0; i < c->n_order && !st; i++)
        if (deferred[c->order[i]]) {
            deferred[c->order[i]] = false;
            st = place(c, c->order[i], &open, deferred, chain);
        }
    free(deferred);
    free(chain);
    if (!st) st = close_kernel(c, &open);
    for (int i = 0; i < p->n_io && !st; i++) {
        if (p->io[i].stream != OTC_IO_OUT) continue;
        otc_plan_step s = {OTC_STEP_STORE, p->io[i].node, -1, i, 0, 0, 0, 0};
        st = otc_plan_add_step(c, s);
    }
    if (!st) st = state_steps(c);
    p->n_forward_steps = p->n_steps;
    return st;
}

void otc_plan_choose_registers(otc_plan_ctx *c) {
    otc_plan *p = c->p;
    const otc_graph *g = p->graph;
    bool *outside = calloc((size_t)c->n + 1, sizeof *outside);
    if (!outside) return; /* everything stays in memory: correct, only slower */
    for (int i = 0; i < p->n_members; i++) {
        otc_id r = p->members[i];
        const otc_node *nd = otc_graph_node(g, r);
        for (int s = 0; s < nd->n_inputs; s++) {
            if (!otc_plan_reads_input(g, r, s)) continue;
            otc_id o = otc_plan_owner(p, nd->inputs[s]);
            if (p->values[o].kernel != p->values[r].kernel) outside[o] = true;
        }
    }
    for (int k = 0; k < p->n_kernels; k++) {
        const otc_plan_kernel *K = &p->kernels[k];
        if (K->kind == OTC_KERNEL_OP) continue;
        int from = K->kind == OTC_KERNEL_MATMUL ? 1 : 0; /* the sum is the accumulator */
        for (int m = from; m < K->count; m++) {
            otc_id id = p->members[K->first + m];
            otc_plan_value *v = &p->values[id];
            if (outside[id] || c->external[id] || v->kept) continue;
            v->storage = OTC_STORE_REGISTER;
            p->n_registers++;
        }
    }
    free(outside);
}
