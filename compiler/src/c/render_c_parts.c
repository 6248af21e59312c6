/* A long schedule as functions of bounded size: the plan's parts (otc_plan_part_end), each
 * spelled as a function NAME_part_N taking the caller's locals, the caller calling them in
 * turn. gcc's passes grow faster than linearly in a function's size. */
#include <stdio.h>

#include "render_c_internal.h"

/* The caller's locals a part may read, in the order of the part's parameters. */
static const struct {
    unsigned bit;
    const char *param; /* its declaration as a parameter (p's: signature()) */
    const char *name;
} locals[] = {
    {OTC_CR_P, NULL, "p"},
    {OTC_CR_W, "const float *w", "w"},
    {OTC_CR_WS, "float *ws", "ws"},
    {OTC_CR_WP, "const float *wp", "wp"},
    {OTC_CR_G, "float *g", "g"},
    {OTC_CR_CARRY, "float *carry", "carry"},
    {OTC_CR_IN, "const float *in", "in"},
    {OTC_CR_OUT, "float *out", "out"},
    {OTC_CR_TARGET, "const float *target", "target"},
    {OTC_CR_LR, "float lr", "lr"},
    {OTC_CR_T, "size_t t", "t"},
};

static void signature(otc_cr *c, otc_text *out, int n) {
    otc_text_printf(out, "%s_PART int %s_part_%d(", c->name, c->name, n);
    for (size_t i = 0; i < sizeof locals / sizeof locals[0]; i++) {
        if (!locals[i].param) {
            /* Only a training step's parts update weights; an inference file has no type. */
            if (c->train)
                otc_text_printf(out, "%s_params *p, ", c->name);
            else
                otc_text_puts(out, "const void *p, ");
        } else {
            otc_text_printf(out, "%s, ", locals[i].param);
        }
    }
    otc_text_puts(out, c->fixed_batch > 0 ? "size_t B) {\n" : "size_t B, size_t S) {\n");
}

/* Does steps [from, to) spell anything under these flags? */
static bool spells(const otc_plan *p, int from, int to, bool backward, bool grads, bool update) {
    if (!backward) return from < to;
    for (int i = from; i < to; i++)
        if (p->steps[i].kind == OTC_STEP_UPDATE ? update : grads) return true;
    return false;
}

static void range(otc_cr *c, int from, int to, bool backward, bool grads, bool update) {
    if (backward)
        otc_cr_backward_range(c, from, to, grads, update);
    else
        otc_cr_forward_range(c, from, to);
}

/* Steps [from, to) as the function NAME_part_N (appended to c->parts) and its call here. */
static void part(otc_cr *c, int from, int to, bool backward, bool grads, bool update) {
    int n = c->n_parts++;
    otc_text body;
    otc_text_init(&body);
    otc_text *sb = c->sb;
    int indent = c->indent;
    c->sb = &body;
    c->indent = 1;
    if (c->fixed_batch > 0)
        otc_cr_line(c, "const size_t S = %d; /* the fixed layout's batch stride */",
                    c->fixed_batch);
    for (size_t i = 0; i < sizeof locals / sizeof locals[0]; i++)
        otc_cr_line(c, "(void)%s;", locals[i].name);
    otc_cr_line(c, "(void)B;");
    otc_cr_line(c, "(void)S;");
    range(c, from, to, backward, grads, update);
    otc_cr_line(c, "return 0;");
    c->sb = sb;
    c->indent = indent;
    if (n == 0)
        otc_text_printf(c->parts,
                        "/* The schedule in parts of bounded size, kept out of line so the "
                        "compiler's time stays linear in the model's depth. */\n"
                        "#if defined(__GNUC__)\n#define %s_PART static __attribute__((noinline))\n"
                        "#else\n#define %s_PART static\n#endif\n\n",
                        c->name, c->name);
    signature(c, c->parts, n);
    if (body.failed)
        c->parts->failed = true;
    else if (body.text)
        otc_text_puts(c->parts, body.text);
    otc_text_free(&body);
    otc_text_puts(c->parts, "}\n\n");
    char args[256];
    size_t used = 0;
    for (size_t i = 0; i < sizeof locals / sizeof locals[0]; i++)
        used += (size_t)snprintf(args + used, sizeof args - used, "%s, ",
                                 c->locals & locals[i].bit ? locals[i].name : "0");
    snprintf(args + used, sizeof args - used, c->fixed_batch > 0 ? "B" : "B, S");
    otc_cr_line(c, "{");
    otc_cr_line(c, "    const int rc = %s_part_%d(%s);", c->name, n, args);
    otc_cr_line(c, "    if (rc) return rc;");
    otc_cr_line(c, "}");
}

/* Steps [from, to): inline when they are one part (the code a graph of ordinary size always
 * had), else part by part. */
static void steps(otc_cr *c, int from, int to, bool backward, bool grads, bool update) {
    if (from >= to || otc_plan_part_end(c->plan, from, to) == to) {
        range(c, from, to, backward, grads, update);
        return;
    }
    for (int i = from; i < to && !c->st;) {
        int end = otc_plan_part_end(c->plan, i, to);
        if (spells(c->plan, i, end, backward, grads, update))
            part(c, i, end, backward, grads, update);
        i = end;
    }
}

void otc_cr_forward_steps(otc_cr *c) {
    steps(c, 0, c->plan->n_forward_steps, false, false, false);
}

void otc_cr_backward_steps(otc_cr *c, bool grads, bool update) {
    steps(c, c->plan->n_forward_steps, c->plan->n_steps, true, grads, update);
}
