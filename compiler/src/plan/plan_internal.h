/* Private: the state the plan's source files share while one plan is being built. */
#ifndef OTC_PLAN_INTERNAL_H
#define OTC_PLAN_INTERNAL_H

#include "otc/plan.h"

typedef struct {
    otc_plan *p;
    const otc_graph *g;
    int n;         /* graph size */
    otc_id *order; /* included nodes (sources, aliases, computed), a topological order */
    int n_order;
    bool *included;
    int *readers;    /* per storage owner: data reads by computed nodes (aliases resolved) */
    bool *external;  /* per owner: read outside the forward kernels (an output, the loss) */
    bool *needs_bwd; /* training: the node has a BACKWARD step */
    int cap_steps;
} otc_plan_ctx;

/* Where a buffer's batched region starts, a multiple of this many floats (64 bytes, a cache
 * line): with a batch stride that is one too, every value's rows start on a line, so vector
 * loads do not split across two (a loss scalar before them put LeNet's emitted training
 * step's every row 4 bytes off). */
enum { OTC_PLAN_ALIGN_FLOATS = 16 };
static inline int64_t otc_plan_align(int64_t floats) {
    return (floats + OTC_PLAN_ALIGN_FLOATS - 1) / OTC_PLAN_ALIGN_FLOATS * OTC_PLAN_ALIGN_FLOATS;
}

/* plan.c */
otc_status otc_plan_add_step(otc_plan_ctx *c, otc_plan_step step);
const char *otc_plan_label(const otc_graph *g, otc_id id, char *buf);
bool otc_plan_is_map_op(otc_op op);
/* May Slice node id run as a member of a map kernel (otc_plan_slice_member)? */
bool otc_plan_slice_as_map(const otc_plan *p, otc_id id);

/* plan_fuse.c: kernels, members and the forward steps; then which values stay in locals. */
otc_status otc_plan_fuse(otc_plan_ctx *c);
/* A member's code size in rough units of one operand read (its inputs, a math call more): what
 * bounds a kernel here and a part (otc_plan_part_end) in plan_schedule.c. */
int64_t otc_plan_member_cost(const otc_graph *g, otc_id id);
void otc_plan_choose_registers(otc_plan_ctx *c);

/* plan_train.c: which values need gradients and which the backward pass reads (before
 * fusion and registers), then the gradient buffer and the backward/update steps. */
otc_status otc_plan_mark_training(otc_plan_ctx *c);
otc_status otc_plan_schedule_backward(otc_plan_ctx *c);

/* plan_schedule.c: the loop schedule the renderers share (dense-product tiling, which
 * backward steps fuse into one loop nest). */
void otc_plan_choose_tiling(otc_plan *p, otc_plan_kernel *K);
void otc_plan_fuse_backward(otc_plan *p);

/* plan_buffers.c: lifetimes and offsets in the activation buffer. */
otc_status otc_plan_assign_buffers(otc_plan_ctx *c);
/* The same first-fit placement for any lifetimes (first..last inclusive, in any unit of
 * time): sets each .off so that lifetimes that overlap never share floats; returns the
 * region's size, -1 when out of memory. */
typedef struct {
    int64_t size;
    int first, last;
    int64_t off;
} otc_plan_lifetime;
int64_t otc_plan_place_lifetimes(otc_plan_lifetime *l, int n);

#endif
