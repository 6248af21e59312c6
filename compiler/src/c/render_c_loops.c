/* The C renderer's spelling of loop programs (otc/loops.h): the per-sample body in a loop over
 * the samples, loops, locals and the program's trees as C expressions. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/loops.h"
#include "render_c_internal.h"

typedef struct {
    otc_cr *c;
    const otc_loop_program *p;
    char text[OTC_LOOP_MAX_OPERANDS + 2][400]; /* operand spellings, then x and x1 */
    int depth;                                 /* open loops (a loop's variable: its number) */
    int n_open;                                /* open loops and WHEN blocks */
    bool open_when[2 * OTC_LOOP_MAX_DEPTH];
    int chunk;        /* > 0: in a chunk of this many samples, a per-sample local an array */
    bool independent; /* innermost loops' iterations are independent (a one-sample variant) */
    bool masked;      /* a batch's last, partial chunk: lanes from B on are not samples */
} speller;

/* Samples a batched body with locals runs at once (see section): two 256-bit vectors (two
 * independent sums per local: LeNet's convolutions at batch 64 measured 1.3-1.7x faster than
 * with one), four NEON ones; gcc and clang vectorise the fixed-count loop over them at -O2.
 * (A second, half chunk for 8 to 15 samples cost LeNet's cc -O3 compile 60% more time.) */
enum { CHUNK = 16 };

static void local_text(const speller *s, char *out, size_t len, int n) {
    if (s->chunk && !s->p->local_uniform[n])
        snprintf(out, len, "L%d[b - b0]", n);
    else
        snprintf(out, len, "l%d", n);
}

/* "i0 * 10 + i1 + 3" */
static void index_text(char *out, size_t len, const otc_loop_index *ix) {
    size_t n = 0;
    out[0] = '\0';
    for (int d = 0; d < OTC_LOOP_MAX_DEPTH; d++) {
        if (!ix->stride[d]) continue;
        if (ix->stride[d] == 1)
            n += (size_t)snprintf(out + n, len - n, "%si%d", n ? " + " : "", d);
        else
            n += (size_t)snprintf(out + n, len - n, "%si%d * %" PRId64, n ? " + " : "", d,
                                  ix->stride[d]);
        if (n >= len) return;
    }
    if (ix->base || !n) snprintf(out + n, len - n, "%s%" PRId64, n ? " + " : "", ix->base);
}

static void element(speller *s, char *out, size_t len, int bf, const otc_loop_index *ix) {
    char e[320];
    index_text(e, sizeof e, ix);
    const otc_loop_buf *b = &s->p->buf[bf];
    if (b->grad)
        otc_cr_grad_at(s->c, out, len, b->node, e);
    else
        otc_cr_at(s->c, out, len, b->node, e);
}

static void operand(speller *s, char *out, size_t len, const otc_loop_operand *o) {
    switch (o->kind) {
    case OTC_LOOP_LOAD:
        element(s, out, len, o->n, &o->at);
        return;
    case OTC_LOOP_LOCAL:
        local_text(s, out, len, o->n);
        return;
    case OTC_LOOP_VAR:
        snprintf(out, len, "(float)i%d", o->n);
        return;
    case OTC_LOOP_CONST: {
        char k[48];
        snprintf(out, len, "%s", otc_cr_float(s->c, k, o->k));
        return;
    }
    case OTC_LOOP_SAMPLES:
        snprintf(out, len, "%s", s->p->batched ? "(float)B" : "1.0f");
        return;
    case OTC_LOOP_SUM: /* a double: what it is divided by is then divided in double */
        snprintf(out, len, "sum%d", o->n);
        return;
    case OTC_LOOP_NONE:
        snprintf(out, len, "0.0f");
        return;
    }
}

/* The statement's tree as C, its leaves bound to its operands (returned malloc'd). */
static char *tree_text(speller *s, const otc_loop_stmt *st) {
    const char *args[OTC_LOOP_MAX_OPERANDS];
    for (int k = 0; k < st->n_operands; k++) {
        operand(s, s->text[k], sizeof s->text[k], &st->operand[k]);
        args[k] = s->text[k];
    }
    otc_cr_leaves leaves = {.arg = args, .n_arg = st->n_operands};
    if (st->x.kind) {
        operand(s, s->text[OTC_LOOP_MAX_OPERANDS], sizeof s->text[0], &st->x);
        leaves.x = s->text[OTC_LOOP_MAX_OPERANDS];
    }
    if (st->x1.kind) {
        operand(s, s->text[OTC_LOOP_MAX_OPERANDS + 1], sizeof s->text[0], &st->x1);
        leaves.x1 = s->text[OTC_LOOP_MAX_OPERANDS + 1];
    }
    otc_text t;
    otc_text_init(&t);
    otc_cr_expr(s->c, &t, st->tree, &leaves);
    char *text = otc_text_take(&t);
    if (!text) s->c->sb->failed = true;
    return text;
}

static void statement(speller *s, const otc_loop_stmt *st) {
    otc_cr *c = s->c;
    if (st->kind == OTC_LOOP_FOR || st->kind == OTC_LOOP_WHEN) {
        bool w = st->kind == OTC_LOOP_WHEN;
        if (s->n_open == 2 * OTC_LOOP_MAX_DEPTH) return; /* the plan nests no deeper */
        s->open_when[s->n_open++] = w;
        if (w) { /* size_t arithmetic: a negative index wraps to a huge one, out of range */
            char e[320];
            index_text(e, sizeof e, &st->at);
            otc_cr_line(c, "if ((size_t)(%s) < %" PRId64 ") {", e, st->count);
        } else {
            otc_cr_line(c, "for (size_t i%d = 0; i%d < %" PRId64 "; i%d++) {", s->depth, s->depth,
                        st->count, s->depth);
            s->depth++;
        }
        c->indent++;
        return;
    }
    if (st->kind == OTC_LOOP_END) {
        c->indent--;
        otc_cr_line(c, "}");
        if (s->n_open > 0 && !s->open_when[--s->n_open]) s->depth--;
        return;
    }
    char *v = tree_text(s, st);
    if (!v) return;
    char dst[400];
    /* In the last, partial chunk only the lanes that are samples store, add and check. */
    const char *only = s->masked ? "if (b < B) " : "";
    switch (st->kind) {
    case OTC_LOOP_LET:
        local_text(s, dst, sizeof dst, st->n);
        otc_cr_line(c, "%s = %s;", dst, v);
        break;
    case OTC_LOOP_STORE:
        element(s, dst, sizeof dst, st->n, &st->at);
        otc_cr_line(c, "%s%s = (float)(%s);", only, dst, v);
        break;
    case OTC_LOOP_ADD:
        element(s, dst, sizeof dst, st->n, &st->at);
        otc_cr_line(c, "%s%s += %s;", only, dst, v);
        break;
    case OTC_LOOP_SUMUP:
        otc_cr_line(c, "%ssum%d += (double)(%s);", only, st->n, v);
        break;
    case OTC_LOOP_CHECK: /* a bad class label: the function returns 2 */
        otc_cr_line(c, "if (%s!(%s)) return 2;", s->masked ? "b < B && " : "", v);
        break;
    default:
        break;
    }
    free(v);
}

/* A body of stores, additions and batch sums only (no locals, no checks) runs each
 * statement's innermost loop over the samples: contiguous floats the compiler vectorises. */
static bool samples_inner(const otc_loop_program *p) {
    if (!p->batched) return false;
    for (int i = 0; i < p->n_stmts; i++) {
        const otc_loop_stmt *st = &p->stmt[i];
        if (st->section == OTC_LOOP_BODY &&
            (st->kind == OTC_LOOP_LET || st->kind == OTC_LOOP_CHECK))
            return false;
    }
    return true;
}

/* A section; `inner`: each run of statements in a loop of its own over the samples (all of
 * them, or with s->chunk those of the chunk from b0). */
static void section(speller *s, otc_loop_section which, bool inner) {
    s->depth = s->n_open = 0;
    bool open = false;
    for (int i = 0; i < s->p->n_stmts; i++) {
        const otc_loop_stmt *st = &s->p->stmt[i];
        if (st->section != which) continue;
        bool loop =
            st->kind == OTC_LOOP_FOR || st->kind == OTC_LOOP_END || st->kind == OTC_LOOP_WHEN;
        if (inner && loop && open) {
            s->c->indent--;
            otc_cr_line(s->c, "}");
            open = false;
        }
        if (inner && !loop && !open) {
            if (s->chunk)
                otc_cr_line(s->c, "for (size_t b = b0; b < b0 + %d; b++) {", s->chunk);
            else
                otc_cr_line(s->c, "for (size_t b = 0; b < B; b++) {");
            s->c->indent++;
            open = true;
        }
        if (s->independent && st->kind == OTC_LOOP_FOR && i + 1 < s->p->n_stmts &&
            s->p->stmt[i + 1].kind == OTC_LOOP_STORE) {
            /* measured 1.3x on the LeNet at batch 1 */
            otc_cr_assume_independent(s->c, true);
        }
        statement(s, st);
    }
    if (open) {
        s->c->indent--;
        otc_cr_line(s->c, "}");
    }
}

/* One chunk's locals and body; `masked`: the batch's last, partial one. */
static void chunk(speller *s, bool masked) {
    for (int i = 0; i < s->p->n_locals; i++)
        if (!s->p->local_uniform[i]) otc_cr_line(s->c, "float L%d[%d] = {0.0f};", i, CHUNK);
    s->chunk = CHUNK;
    s->masked = masked;
    section(s, OTC_LOOP_BODY, true);
    s->chunk = 0;
    s->masked = false;
}

int64_t otc_cr_loop_slack(const otc_plan *plan) {
    if (!plan) return 0;
    for (int i = 0; i < plan->n_members; i++)
        if (otc_loop_lowers(otc_graph_node(plan->graph, plan->members[i])->op)) return CHUNK;
    return 0;
}

/* In a training file a forward loop program is a function of its buffers, B and S
 * (NAME_lpN): NAME_forward and NAME_train_step call one copy (render_c_shared.c), which cc
 * compiles once. A gradient's program runs in one place and stays inline (out of line,
 * LeNet's step at batch 11 ran ~4% slower). */
static void begin_function(otc_cr *c, otc_cr_fn *f) {
    otc_cr_fn_begin(c, f);
    if (c->fixed_batch > 0)
        otc_cr_line(c, "const size_t S = %d; /* the fixed layout's batch stride */",
                    c->fixed_batch);
}

/* Its parameters and the call's arguments: each buffer once (by its storage owner, as the
 * caller declared it), writable where the program writes it, then B and S. */
static void end_function(otc_cr *c, otc_cr_fn *f, const otc_loop_program *p, otc_id id) {
    otc_text params, args;
    otc_text_init(&params);
    otc_text_init(&args);
    otc_cr_line(c, "(void)B;");
    otc_cr_line(c, "(void)S;");
    otc_cr_line(c, "return 0;");
    bool check = false;
    for (int i = 0; i < p->n_stmts; i++) check |= p->stmt[i].kind == OTC_LOOP_CHECK;
    for (int i = 0; i < p->n_bufs; i++) {
        const otc_loop_buf *b = &p->buf[i];
        otc_id o = otc_plan_owner(c->plan, b->node);
        char prefix = b->grad ? 'g' : 'v';
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |= p->buf[j].grad == b->grad && otc_plan_owner(c->plan, p->buf[j].node) == o;
        if (seen) continue;
        bool writable = b->grad || b->node == id;
        otc_text_printf(&params, "%sfloat *restrict %c%d, ", writable ? "" : "const ", prefix,
                        (int)o);
        otc_text_printf(&args, "%c%d, ", prefix, (int)o);
    }
    otc_text_puts(&params, c->fixed_batch > 0 ? "size_t B" : "size_t B, size_t S");
    otc_text_puts(&args, c->fixed_batch > 0 ? "B" : "B, S");
    char decl[96];
    otc_cr_upper(decl, c->name, sizeof decl - 16);
    strcat(decl, "_KERNEL int");
    int n = otc_cr_fn_end(c, f, decl, "lp", &c->n_loop_fns, params.text ? params.text : "", NULL);
    if (params.failed || args.failed) {
        c->sb->failed = true;
    } else {
        if (check)
            otc_cr_line(c, "if (%s_lp%d(%s)) return 2; /* a class label out of range */", c->name,
                        n, args.text);
        else
            otc_cr_line(c, "%s_lp%d(%s);", c->name, n, args.text);
    }
    otc_text_free(&params);
    otc_text_free(&args);
}

void otc_cr_loop_program(otc_cr *c, otc_id id, bool backward) {
    otc_loop_program *p = NULL;
    otc_status st = otc_plan_lower(c->plan, id, backward, &p);
    if (st) {
        if (!c->st) c->st = st;
        return;
    }
    /* A convolution with a single sample runs a variant of its own, vectorised across the
     * sample's pixels instead of the (absent) other samples. */
    otc_loop_program *px = NULL;
    bool sums = !backward && p->batched && otc_cr_conv_one_sample_fits(c, id);
    if (!backward && p->batched && !sums) st = otc_plan_lower_pixels(c->plan, id, &px);
    if (st) {
        if (!c->st) c->st = st;
        otc_loop_program_free(p);
        return;
    }
    for (int i = 0; i < p->n_bufs; i++) {
        const otc_loop_buf *b = &p->buf[i];
        if (b->grad) {
            otc_cr_grad_pointer(c, b->node);
            continue;
        }
        otc_id o = otc_plan_owner(c->plan, b->node);
        if (c->plan->values[o].storage == OTC_STORE_REGISTER && !c->st) {
            char lab[64];
            c->st = otc_fail(OTC_ERR_STATE, "emit-c: internal: value %s is read but was not kept",
                             otc_graph_node_label(c->g, b->node, lab, sizeof lab));
        }
        otc_cr_pointer(c, b->node, !backward && b->node == id);
    }
    otc_cr_fn f;
    bool apart = c->share && !backward;
    if (apart) begin_function(c, &f);
    if (p->n_locals) {
        char line[OTC_LOOP_MAX_LOCALS * 16] = "float";
        for (int i = 0; i < p->n_locals; i++)
            snprintf(line + strlen(line), sizeof line - strlen(line), "%s l%d = 0.0f", i ? "," : "",
                     i);
        otc_cr_line(c, "%s;", line);
    }
    for (int i = 0; i < p->n_sums; i++) otc_cr_line(c, "double sum%d = 0.0;", i);
    speller s = {.c = c, .p = p};
    section(&s, OTC_LOOP_BEFORE, false);
    if (sums) { /* stride 1: the sums in locals (render_c_conv1.c) */
        otc_cr_line(c, "if (S == 1) { /* one sample: sums in locals along its pixels */");
        c->indent++;
        otc_cr_conv_one_sample(c, id);
        c->indent--;
        otc_cr_line(c, "} else {");
        c->indent++;
    } else if (px) {
        /* its buffers are the program's own: declared above */
        /* S == 1: a batch of one in the layout (a fixed layout's S may be larger) */
        otc_cr_line(c, "if (S == 1) { /* one sample: vectorised across its pixels */");
        c->indent++;
        /* Each innermost loop's iterations store distinct elements and read the output
         * only where they store it (otc_plan_lower_pixels). */
        speller one = {.c = c, .p = px, .independent = true};
        c->one_sample = true;
        section(&one, OTC_LOOP_BODY, false);
        c->one_sample = false;
        c->indent--;
        otc_cr_line(c, "} else {");
        c->indent++;
    }
    if (!p->batched || samples_inner(p)) {
        section(&s, OTC_LOOP_BODY, p->batched);
    } else {
        /* Locals hold a value per sample: whole chunks of CHUNK samples run each statement
         * over the chunk (arrays of locals, contiguous loads: vector code). The 2 to CHUNK - 1
         * samples left run as one more chunk whose lanes from B on store, add and check
         * nothing: one sample at a time they took 5-10x as long a sample (LeNet at batch 11:
         * 75 against 13 us a sample). Those lanes load the floats after a row's last sample
         * (the next row's, or past the workspace's last value the slack otc_cr_loop_slack
         * reserves) and compute on them, but nothing they compute is kept, so no sample's
         * result depends on them. One sample left runs alone (a batch of 1, 17, ...: a whole
         * chunk for it cost more). */
        otc_cr_line(c, "size_t b0 = 0;");
        otc_cr_line(c, "for (; b0 + %d <= B; b0 += %d) {", CHUNK, CHUNK);
        c->indent++;
        chunk(&s, false);
        c->indent--;
        otc_cr_line(c, "}");
        otc_cr_line(c, "if (B - b0 == 1) {");
        c->indent++;
        otc_cr_line(c, "for (size_t b = b0; b < B; b++) {");
        c->indent++;
        section(&s, OTC_LOOP_BODY, false);
        c->indent--;
        otc_cr_line(c, "}");
        c->indent--;
        otc_cr_line(c, "} else if (b0 < B) {");
        c->indent++;
        chunk(&s, true);
        c->indent--;
        otc_cr_line(c, "}");
    }
    if (px || sums) {
        c->indent--;
        otc_cr_line(c, "}");
    }
    section(&s, OTC_LOOP_AFTER, false);
    if (apart) end_function(c, &f, p, id);
    otc_loop_program_free(px);
    otc_loop_program_free(p);
}
