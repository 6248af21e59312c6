/* Private: what the C renderer's files share while spelling one plan. */
#ifndef OTC_RENDER_C_INTERNAL_H
#define OTC_RENDER_C_INTERNAL_H

#include "otc/render_c.h"
#include "plan_internal.h"
#include "otc/text.h"

typedef struct {
    otc_text *sb;
    const otc_plan *plan;
    const otc_graph *g;
    const char *name;
    int *mark;    /* per node: the kernel that last declared its pointer (+1) */
    int mark_gen; /* bumped per kernel/step */
    int indent;
    bool f_used[OTC_ACT_COUNT]; /* activation helpers the bodies call */
    bool df_used[OTC_ACT_COUNT];
    otc_status st;
} otc_cr;

/* One line of code at the current indentation. */
void otc_cr_line(otc_cr *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Function bodies, written into c->sb at one indentation level (the caller writes the
 * signature, the locals ws/w/g/B/S/in/out/target and the argument checks). */
void otc_cr_forward_steps(otc_cr *c);
void otc_cr_backward_steps(otc_cr *c);

/* A C float literal that reads back to exactly f ("0.5f", "1.0f", "-3.25e-08f"); f finite,
 * buf >= 32 bytes. */
const char *otc_cr_float_literal(char *buf, size_t len, float f);

/* Helpers shared by the two. */
const char *otc_cr_float(otc_cr *c, char *buf, float f); /* literal, fails on non-finite */
const char *otc_cr_offset(char *buf, otc_extent e);      /* "12 + 3 * S" */
/* "float *restrict v7 = ws + 12;" (once per kernel/step) for the storage owner of id. */
void otc_cr_pointer(otc_cr *c, otc_id id, bool writable);
void otc_cr_grad_pointer(otc_cr *c, otc_id id);
/* Element `elem` (an expression) of sample b of stored value id: "v7[(elem) * S + b]". */
void otc_cr_at(otc_cr *c, char *buf, size_t len, otc_id id, const char *elem);
void otc_cr_grad_at(otc_cr *c, char *buf, size_t len, otc_id id, const char *elem);
/* Loops over a value's elements and samples: opens "for e / for b" braces, returns how many
 * to close with otc_cr_close. */
int otc_cr_loops(otc_cr *c, int64_t n, bool batched, bool sample_outer);
void otc_cr_close(otc_cr *c, int n);
/* Per-sample dims of a node's shape around axis: outer blocks, the axis, inner elements. */
void otc_cr_split(const otc_node *nd, const otc_shape *s, int axis, int64_t *outer, int64_t *mid,
                  int64_t *inner);
/* The activation of an activation op or Neuron. */
const otc_act_info *otc_cr_act(const otc_node *nd);
/* "NAME_f_tanh(x, a)" / "NAME_df_tanh(x, y, a)": calls to the file's activation helpers
 * (static functions pasting the activation table's C expressions), marked as used. */
void otc_cr_act_call(otc_cr *c, char *buf, size_t len, const otc_node *nd, const char *x);
void otc_cr_dact_call(otc_cr *c, char *buf, size_t len, const otc_node *nd, const char *x,
                      const char *y);
/* The helpers marked used, as static functions. */
void otc_cr_act_helpers(otc_cr *c, otc_text *out);

#endif
