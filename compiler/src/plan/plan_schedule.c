/* The loop schedule every renderer spells: how each dense product is blocked, and which
 * backward steps run as one loop nest (backward fusion). Decided here once, so the emitted C
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
