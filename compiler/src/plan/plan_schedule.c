/* The loop schedule every renderer spells: how each dense product is blocked, which
 * backward steps run as one loop nest (backward fusion) and where a long schedule is cut
 * into functions (parts). Decided here once, so the emitted C
 * and the JIT get the same schedule and differ only in how they write it. */
#include "plan_internal.h"

/* Output columns per block and vectors of samples per block: 4 x 2 keeps eight independent
 * multiply-add chains in flight (each loaded vector of samples serves four columns, each
 * broadcast weight two vectors), 8 + 2 + 4 registers of the sixteen AVX2 and NEON have. */
enum { TILE_COLS = 4, TILE_VECTORS = 2 };
/* Weight gradient: 4 rows of W (four samples of A broadcast) by 16 columns (two vectors of a
 * transposed chunk of the output gradient): eight accumulators, as above. The input
 * gradient's blocks of its K rows are as tall (4 x 2 vectors). */
enum { GRAD_ROWS = 4, GRAD_COLS = 16 };

static int at_most(int64_t n, int cap) {
    return n < cap ? (int)(n > 0 ? n : 1) : cap;
}

void otc_plan_choose_tiling(otc_plan *p, otc_plan_kernel *K) {
    const otc_node *nd = otc_graph_node(p->graph, p->members[K->first]);
    int64_t k = p->values[otc_plan_owner(p, nd->inputs[0])].size;
    K->tiling.cols = at_most(K->n, TILE_COLS);
    K->tiling.vectors = TILE_VECTORS;
    K->tiling.grad_rows = at_most(k, GRAD_ROWS);
    K->tiling.grad_cols = at_most(K->n, GRAD_COLS);
    K->tiling.panels = k * K->n > OTC_PLAN_PANEL_W;
}

/* Is a backward step elementwise over its kernel's loop space (a map member, or a member of
 * a matmul's epilogue), so that it can share a loop nest with its neighbours? */
static bool elementwise_backward(const otc_plan *p, otc_id id) {
    const otc_plan_value *v = &p->values[id];
    if (v->kernel < 0) return false;
    const otc_plan_kernel *K = &p->kernels[v->kernel];
    if (K->kind == OTC_KERNEL_MAP) return true;
    return K->kind == OTC_KERNEL_MATMUL && p->members[K->first] != id;
}

/* Runs of consecutive backward steps of one kernel with elementwise rules: each step touches
 * only its own element and sample, so one pass over (e, b) does them all, in step order. */
void otc_plan_fuse_backward(otc_plan *p) {
    for (int i = p->n_forward_steps; i < p->n_steps; i++) {
        otc_plan_step *s = &p->steps[i];
        if (s->kind != OTC_STEP_BACKWARD) continue;
        s->fused = 0;
        if (!elementwise_backward(p, s->node)) continue;
        int j = i + 1;
        while (j < p->n_steps && p->steps[j].kind == OTC_STEP_BACKWARD &&
               p->steps[j].kernel == s->kernel && elementwise_backward(p, p->steps[j].node))
            p->steps[j++].fused = -1;
        s->fused = j - i;
        i = j - 1;
    }
}

/* A step's code size in otc_plan_member_cost's units: a kernel's members, a gradient rule
 * (its member's code several times over: the derivative, each input's gradient, the batch
 * sums of the weights'), a dense product or a structural op's loop nests. */
static int64_t step_cost(const otc_plan *p, const otc_plan_step *s) {
    enum { LOOP_NEST = 32 };
    int64_t n = 1;
    if (s->kind == OTC_STEP_KERNEL) {
        const otc_plan_kernel *K = &p->kernels[s->kernel];
        if (K->kind != OTC_KERNEL_MAP) n += LOOP_NEST;
        for (int m = 0; m < K->count; m++)
            n += otc_plan_member_cost(p->graph, p->members[K->first + m]);
    } else if (s->kind == OTC_STEP_BACKWARD) {
        const otc_plan_value *v = &p->values[s->node];
        if (v->kernel < 0 || p->kernels[v->kernel].kind != OTC_KERNEL_MAP) n += LOOP_NEST;
        /* gcc -O2 on a 200-neuron chain's training step: 16.6 s with the factor 2, 11.6 s
         * with 6 (a fused run of a kernel's rules is then a part of its own). */
        n += 6 * otc_plan_member_cost(p->graph, s->node);
    }
    return n;
}

/* Units per part: a few kernels. gcc -O2's time per function grows faster than linearly
 * (500 tanh neurons in one function: 39 s); at this size a function takes a fraction of a
 * second. The forward pass of an MLP, LeNet or an evolved genome of ordinary size stays one
 * part; their training steps are two or three (a call between loop nests costs nothing next
 * to them). */
enum { PART_COST = 512 };

int otc_plan_part_end(const otc_plan *p, int from, int to) {
    int64_t cost = 0;
    int i = from;
    while (i < to && (i == from || cost < PART_COST)) {
        const otc_plan_step *s = &p->steps[i];
        int n = s->kind == OTC_STEP_BACKWARD && s->fused > 1 ? s->fused : 1;
        for (int k = 0; k < n && i + k < to; k++) cost += step_cost(p, &p->steps[i + k]);
        i += n;
    }
    return i < to ? i : to;
}
