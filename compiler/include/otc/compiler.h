/* The compiler in one include: the plan, the C renderer, and the helper that turns a saved
 * forward graph into a training graph for `otc compile --train`. */
#ifndef OTC_COMPILER_H
#define OTC_COMPILER_H

#include "otc/plan.h"
#include "otc/render_c.h"
#include "otc/unroll.h"

/* Add a loss over g's outputs for training: OTC_OP_MSE or OTC_OP_BCE against a new Input
 * "target" shaped like the outputs (several outputs are concatenated along axis 1, in
 * output order), or OTC_OP_SOFTMAX_CE on the single output's logits [B,C] against an Input
 * "target" [B,1] of class indices. If the last output already is a loss, it is used as is
 * (target -1). The outputs stay marked. */
otc_status otc_compile_add_loss(otc_graph *g, otc_op loss, otc_id *loss_out, otc_id *target_out);

#endif
