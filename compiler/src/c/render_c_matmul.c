/* The C renderer's dense products: the plan's register blocks (otc_plan_tiling) spelled as
 * plain C99 that gcc and clang vectorise without -ffast-math: each block's sums are named
 * scalars (s<row>_<lane>) laid along contiguous memory, so the compiler packs a row's lanes
 * into vector registers and keeps them there while the shared dimension runs innermost.
 * One sample (B == 1) has blocks of its own: output columns' sums in registers along W's rows.
 * A W too large for a cache runs the blocks over panels of the shared dimension.
 * Each product is a helper function of its own, marked NAME_BLOCKED: for gcc, no loop
 * vectoriser there (it would vectorise across the sum's iterations with shuffles, 3-7x
 * slower than the straight-line packing it leaves to the SLP vectoriser; measured). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "render_c_internal.h"

/* One line built in pieces (a block row's statements), then written at the indentation. */
static void flush(otc_cr *c, otc_text *t) {
    char *s = otc_text_take(t);
    if (!s) {
        c->sb->failed = true;
    } else {
        otc_cr_line(c, "%s", s);
        free(s);
    }
    otc_text_init(t);
}

/* "float s0 = 0.0f, ..., s<n-1> = 0.0f;" */
static void zero_sums(otc_cr *c, otc_text *t, int n) {
    otc_text_puts(t, "float");
    for (int j = 0; j < n; j++) otc_text_printf(t, "%s s%d = 0.0f", j ? "," : "", j);
    otc_text_puts(t, ";");
    flush(c, t);
}

/* "W[...]": the weight of block row j at shared index q, for either layout of W. */
static const char *weight_at(char *buf, size_t len, const otc_cr_mm *d, const char *row0, int j) {
    if (d->w_by_out)
        snprintf(buf, len, "%s[(%s + %d) * %" PRId64 " + q]", d->w, row0, j, d->w_stride);
    else
        snprintf(buf, len, "%s[q * %" PRId64 " + %s + %d]", d->w, d->w_stride, row0, j);
    return buf;
}

/* How a block's sums start and end. Whole product: zero, summed over every q, then written
 * (=) or added (+=) to out. Panel: resumed from out, summed over q in [q0, q1), written back. */
typedef enum { WHOLE, PANEL } block_span;

/* One register block of `rows` output rows x `lanes` samples from b0 (set before it), summed
 * over q in order. `skip`: the block overlaps the one before (samples before bs are already
 * done there), so it stores only from bs on. */
static void block(otc_cr *c, const otc_cr_mm *d, const char *row0, int rows, int lanes, bool skip,
                  block_span span) {
    bool panel = span == PANEL;
    const char *op = d->accumulate && !panel ? "+=" : "=";
    otc_text t;
    otc_text_init(&t);
    for (int j = 0; j < rows; j++) {
        if (panel)
            otc_text_printf(&t, "const float *restrict i%d = %s + (%s + %d) * S + b0; ", j, d->out,
                            row0, j);
        otc_text_puts(&t, "float");
        for (int l = 0; l < lanes; l++) {
            if (panel)
                otc_text_printf(&t, "%s s%d_%d = i%d[%d]", l ? "," : "", j, l, j, l);
            else
                otc_text_printf(&t, "%s s%d_%d = 0.0f", l ? "," : "", j, l);
        }
        otc_text_puts(&t, ";");
        flush(c, &t);
    }
    if (panel)
        otc_cr_line(c, "for (size_t q = q0; q < q1; q++) {");
    else
        otc_cr_line(c, "for (size_t q = 0; q < %" PRId64 "; q++) {", d->inner);
    c->indent++;
    otc_cr_line(c, "const float *restrict xq = %s + q * S + b0;", d->x);
    char w[160];
    for (int j = 0; j < rows; j++)
        otc_cr_line(c, "const float w%d = %s;", j, weight_at(w, sizeof w, d, row0, j));
    for (int j = 0; j < rows; j++) {
        for (int l = 0; l < lanes; l++)
            otc_text_printf(&t, "%ss%d_%d += xq[%d] * w%d;", l ? " " : "", j, l, l, j);
        flush(c, &t);
    }
    c->indent--;
    otc_cr_line(c, "}");
    for (int j = 0; j < rows; j++) {
        otc_text_printf(&t, "{ float *restrict o = %s + (%s + %d) * S + b0;", d->out, row0, j);
        if (skip) {
            otc_text_puts(&t, " const float t[] = {");
            for (int l = 0; l < lanes; l++) otc_text_printf(&t, "%ss%d_%d", l ? ", " : "", j, l);
            otc_text_printf(&t, "}; for (size_t l = bs - b0; l < %d; l++) o[l] %s t[l];", lanes,
                            op);
        } else {
            for (int l = 0; l < lanes; l++) otc_text_printf(&t, " o[%d] %s s%d_%d;", l, op, j, l);
        }
        otc_text_puts(&t, " }");
        flush(c, &t);
    }
    otc_text_free(&t);
}

/* Register blocks of `rows` output rows x `lanes` samples over the whole batch (B >= lanes).
 * The last block ends at the last sample (b0 = B - lanes), overlapping the one before when
 * lanes does not divide B: "=" writes the overlapped samples again with the same sums, in
 * the same loop; "+=" must add them once, in a copy of the block of its own (adding through
 * a per-lane loop in every block cost the MLP's training step 5-10%, measured), and so must a
 * panel (its overlapped samples resume from sums the block before already moved on). */
static void blocks(otc_cr *c, const otc_cr_mm *d, const char *row0, int rows, int lanes,
                   block_span span) {
    bool own = d->accumulate || span == PANEL;
    otc_cr_line(c, "size_t bs = 0;");
    if (own)
        otc_cr_line(c, "for (; bs + %d <= B; bs += %d) {", lanes, lanes);
    else
        otc_cr_line(c, "for (; bs < B; bs += %d) {", lanes);
    c->indent++;
    if (own)
        otc_cr_line(c, "const size_t b0 = bs;");
    else
        otc_cr_line(c, "const size_t b0 = bs + %d <= B ? bs : B - %d;", lanes, lanes);
    block(c, d, row0, rows, lanes, false, span);
    c->indent--;
    otc_cr_line(c, "}");
    if (!own) return;
    otc_cr_line(c, "if (bs < B) {");
    c->indent++;
    otc_cr_line(c, "const size_t b0 = B - %d;", lanes);
    block(c, d, row0, rows, lanes, true, span);
    c->indent--;
    otc_cr_line(c, "}");
}

/* Samples in the widest block: OTC_CR_LANES times the plan's vectors a block. */
static int widest(const otc_cr_mm *d) {
    return OTC_CR_LANES * (d->vectors > 0 ? d->vectors : 1);
}

/* Blocks of d->rows output rows x OTC_CR_LANES * vectors samples, and no sample summed alone
 * while the batch holds 4: the samples short of a block (75 = 4 x 16 + 11) run as one more
 * whole block ending at the last sample (it reads only samples of the batch: no padding, the
 * workspace as it was), and a batch narrower than a block as blocks of half, a quarter ...
 * the width down to 4 samples. Scalar sums only for batches of 2-3 (B == 1 has blocks of its
 * own). At batch 75, its 11 samples one at a time took most of the product's time (perf). */
static void rows_body(otc_cr *c, const otc_cr_mm *d, const char *row0, int rows, block_span span) {
    bool panel = span == PANEL;
    int lanes = widest(d);
    for (int w = lanes; w >= 4; w /= 2) {
        otc_cr_line(c, "%sif (B >= %d) {", w == lanes ? "" : "} else ", w);
        c->indent++;
        blocks(c, d, row0, rows, w, span);
        c->indent--;
    }
    otc_cr_line(c, "} else {");
    c->indent++;
    otc_text t;
    otc_text_init(&t);
    const char *op = d->accumulate && !panel ? "+=" : "=";
    char w[160];
    otc_cr_line(c, "for (size_t b0 = 0; b0 < B; b0++) {");
    c->indent++;
    if (panel) {
        otc_text_puts(&t, "float");
        for (int j = 0; j < rows; j++)
            otc_text_printf(&t, "%s s%d = %s[(%s + %d) * S + b0]", j ? "," : "", j, d->out, row0,
                            j);
        otc_text_puts(&t, ";");
        flush(c, &t);
        otc_cr_line(c, "for (size_t q = q0; q < q1; q++) {");
    } else {
        zero_sums(c, &t, rows);
        otc_cr_line(c, "for (size_t q = 0; q < %" PRId64 "; q++) {", d->inner);
    }
    c->indent++;
    otc_cr_line(c, "const float xb = %s[q * S + b0];", d->x);
    for (int j = 0; j < rows; j++)
        otc_cr_line(c, "s%d += xb * %s;", j, weight_at(w, sizeof w, d, row0, j));
    c->indent--;
    otc_cr_line(c, "}");
    for (int j = 0; j < rows; j++)
        otc_cr_line(c, "%s[(%s + %d) * S + b0] %s s%d;", d->out, row0, j, op, j);
    c->indent--;
    otc_cr_line(c, "}");
    otc_text_free(&t);
    c->indent--;
    otc_cr_line(c, "}");
}

/* Samples per transposed chunk of the output gradient: 64 x grad_cols floats on the stack
 * (4 KiB at 16 columns), reused by every block of rows. */
#define GW_CHUNK 64

/* rows x cols accumulators of gW at (k0, n0), summed over the chunk's samples. */
static void gw_block(otc_cr *c, const otc_cr_gw *d, const char *k0, int rows, int cols) {
    otc_text t;
    otc_text_init(&t);
    otc_cr_line(c, "{");
    c->indent++;
    for (int i = 0; i < rows; i++) {
        otc_cr_line(c, "float *restrict d%d = %s + (%s + %d) * %" PRId64 " + n0;", i, d->gw, k0, i,
                    d->n);
        otc_cr_line(c, "const float *restrict a%d = %s + (%s + %d) * S + b0;", i, d->a, k0, i);
        otc_text_puts(&t, "float");
        for (int l = 0; l < cols; l++)
            otc_text_printf(&t, "%s s%d_%d = d%d[%d]", l ? "," : "", i, l, i, l);
        otc_text_puts(&t, ";");
        flush(c, &t);
    }
    otc_cr_line(c, "for (size_t b = 0; b < bn; b++) {");
    c->indent++;
    otc_cr_line(c, "const float *restrict tb = t[b];");
    for (int i = 0; i < rows; i++) {
        otc_text_printf(&t, "{ const float ab = a%d[b];", i);
        for (int l = 0; l < cols; l++) otc_text_printf(&t, " s%d_%d += ab * tb[%d];", i, l, l);
        otc_text_puts(&t, " }");
        flush(c, &t);
    }
    c->indent--;
    otc_cr_line(c, "}");
    for (int i = 0; i < rows; i++) {
        for (int l = 0; l < cols; l++)
            otc_text_printf(&t, "%sd%d[%d] = s%d_%d;", l ? " " : "", i, l, i, l);
        flush(c, &t);
    }
    c->indent--;
    otc_cr_line(c, "}");
    otc_text_free(&t);
}

/* Columns [n0, n0 + cols) of gW over all samples: chunk by chunk, the chunk of the output
 * gradient transposed to sample-major on the stack, then every block of rows over it. */
static void gw_cols(otc_cr *c, const otc_cr_gw *d, int cols) {
    otc_cr_line(c, "for (size_t b0 = 0; b0 < B; b0 += %d) {", GW_CHUNK);
    c->indent++;
    otc_cr_line(c, "const size_t bn = B - b0 < %d ? B - b0 : %d;", GW_CHUNK, GW_CHUNK);
    otc_cr_line(c, "float t[%d][%d];", GW_CHUNK, cols);
    otc_cr_line(c, "for (size_t l = 0; l < %d; l++) {", cols);
    otc_cr_line(c, "    const float *restrict gl = %s + (n0 + l) * S + b0;", d->g);
    otc_cr_line(c, "    for (size_t b = 0; b < bn; b++) t[b][l] = gl[b];");
    otc_cr_line(c, "}");
    int rows = d->rows < 1 ? 1 : d->rows;
    int64_t full = d->k / rows * rows;
    if (full > 0) {
        otc_cr_line(c, "for (size_t k0 = 0; k0 < %" PRId64 "; k0 += %d)", full, rows);
        gw_block(c, d, "k0", rows, cols);
    }
    if (full < d->k) {
        char k0[32];
        snprintf(k0, sizeof k0, "%" PRId64, full);
        gw_block(c, d, k0, (int)(d->k - full), cols);
    }
    c->indent--;
    otc_cr_line(c, "}");
}

static void weight_grad_body(otc_cr *c, const otc_cr_gw *d) {
    int cols = d->cols < 1 ? 1 : d->cols;
    int64_t full = d->n / cols * cols;
    if (full > 0) {
        otc_cr_line(c, "for (size_t n0 = 0; n0 < %" PRId64 "; n0 += %d) {", full, cols);
        c->indent++;
        gw_cols(c, d, cols);
        c->indent--;
        otc_cr_line(c, "}");
    }
    if (full < d->n) {
        otc_cr_line(c, "{");
        c->indent++;
        otc_cr_line(c, "const size_t n0 = %" PRId64 ";", full);
        gw_cols(c, d, (int)(d->n - full));
        c->indent--;
        otc_cr_line(c, "}");
    }
}

/* One sample: out[e * S] (= | resuming from out, +=) sum_q x[q * S] * w(e, q) for the
 * `cols` columns from e0 and q in [from, to), their sums named scalars the compiler packs into
 * vector registers along W's contiguous rows, q outermost as the interpreter adds them. */
static void one_sample_block(otc_cr *c, const otc_cr_mm *d, int cols, const char *from,
                             const char *to, bool resume) {
    otc_text t;
    otc_text_init(&t);
    if (resume) {
        otc_text_puts(&t, "float");
        for (int l = 0; l < cols; l++)
            otc_text_printf(&t, "%s s%d = %s[(e0 + %d) * S]", l ? "," : "", l, d->out, l);
        otc_text_puts(&t, ";");
        flush(c, &t);
    } else {
        zero_sums(c, &t, cols);
    }
    otc_cr_line(c, "for (size_t q = %s; q < %s; q++) {", from, to);
    c->indent++;
    otc_cr_line(c, "const float xq = %s[q * S];", d->x);
    otc_cr_line(c, "const float *restrict wq = %s + q * %" PRId64 " + e0;", d->w, d->w_stride);
    for (int l = 0; l < cols; l++) otc_text_printf(&t, "%ss%d += xq * wq[%d];", l ? " " : "", l, l);
    flush(c, &t);
    c->indent--;
    otc_cr_line(c, "}");
    for (int l = 0; l < cols; l++)
        otc_text_printf(&t, "%s%s[(e0 + %d) * S] = s%d;", l ? " " : "", d->out, l, l);
    flush(c, &t);
    otc_text_free(&t);
}

/* Every column of the one-sample product over q in [from, to): blocks of OTC_CR_ONE_COLS,
 * then the rest as one narrower block. */
static void one_sample_columns(otc_cr *c, const otc_cr_mm *d, int64_t n_cols, const char *from,
                               const char *to, bool resume) {
    int64_t full = n_cols / OTC_CR_ONE_COLS * OTC_CR_ONE_COLS;
    if (full > 0) {
        otc_cr_line(c, "for (size_t e0 = 0; e0 < %" PRId64 "; e0 += %d) {", full, OTC_CR_ONE_COLS);
        c->indent++;
        one_sample_block(c, d, OTC_CR_ONE_COLS, from, to, resume);
        c->indent--;
        otc_cr_line(c, "}");
    }
    if (full < n_cols) {
        otc_cr_line(c, "{");
        c->indent++;
        otc_cr_line(c, "const size_t e0 = %" PRId64 ";", full);
        one_sample_block(c, d, (int)(n_cols - full), from, to, resume);
        c->indent--;
        otc_cr_line(c, "}");
    }
}

/* A helper's body, spelled apart since otc_cr_fn_begin, filed in c->helpers (once per distinct
 * text in a training file): its number. */
static int helper_end(otc_cr *c, otc_cr_fn *f, const char *params, const char *guard) {
    char mac[96], decl[128];
    otc_cr_upper(mac, c->name, sizeof mac);
    snprintf(decl, sizeof decl, "%s_BLOCKED static void", mac);
    return otc_cr_fn_end(c, f, decl, "mm", &c->n_helpers, params, guard);
}

/* The parameters of a product's helper (its leading ones `lead`), h the product as its
 * body names it: x, wm, out. */
static void mm_helper_begin(otc_cr *c, otc_cr_fn *f, char *params, size_t len, const char *lead,
                            const otc_cr_mm *d, otc_cr_mm *h) {
    snprintf(params, len,
             "%s, const float *restrict x, const float *restrict wm, float *restrict out", lead);
    *h = *d;
    h->x = "x";
    h->w = "wm";
    h->out = "out";
    otc_cr_fn_begin(c, f);
}

void otc_cr_mm_rows(otc_cr *c, const otc_cr_mm *d, const char *row0, int rows) {
    otc_cr_fn f;
    otc_cr_mm h;
    char params[160];
    mm_helper_begin(c, &f, params, sizeof params, "size_t B, size_t S, size_t r0", d, &h);
    rows_body(c, &h, "r0", rows, WHOLE);
    int id = helper_end(c, &f, params, NULL);
    otc_cr_line(c, "%s_mm%d(B, S, %s, %s, %s, %s);", c->name, id, row0, d->x, d->w, d->out);
}

int otc_cr_tall_min(const otc_cr_mm *d) {
    return widest(d) / 2;
}

/* Tall blocks: the widest width, or half of it for a batch narrower (11 samples: two
 * overlapping blocks of 8, one 256-bit vector a row). */
static void tall_body(otc_cr *c, const otc_cr_mm *d, const char *row0, int rows, block_span span) {
    int lanes = widest(d);
    otc_cr_line(c, "if (B >= %d) {", lanes);
    c->indent++;
    blocks(c, d, row0, rows, lanes, span);
    c->indent--;
    otc_cr_line(c, "} else {");
    c->indent++;
    blocks(c, d, row0, rows, lanes / 2, span);
    c->indent--;
    otc_cr_line(c, "}");
}

void otc_cr_mm_tall_rows(otc_cr *c, const otc_cr_mm *d, const char *row0, int rows) {
    otc_cr_fn f;
    otc_cr_mm h;
    char params[160], mac[96], guard[128];
    mm_helper_begin(c, &f, params, sizeof params, "size_t B, size_t S, size_t r0", d, &h);
    tall_body(c, &h, "r0", rows, WHOLE);
    /* Defined only where it is called: an unused static function is a warning. */
    otc_cr_upper(mac, c->name, sizeof mac);
    snprintf(guard, sizeof guard, "#if %s_TALL_BLOCKS", mac);
    c->tall_blocks = true;
    int id = helper_end(c, &f, params, guard);
    otc_cr_line(c, "%s_mm%d(B, S, %s, %s, %s, %s);", c->name, id, row0, d->x, d->w, d->out);
}

void otc_cr_mm_all_rows(otc_cr *c, const otc_cr_mm *d, int64_t n_rows, int block) {
    if (block < 1) block = 1;
    int64_t full = n_rows / block * block;
    if (full > 0) {
        otc_cr_line(c, "for (size_t r0 = 0; r0 < %" PRId64 "; r0 += %d)", full, block);
        c->indent++;
        otc_cr_mm_rows(c, d, "r0", block);
        c->indent--;
    }
    if (full < n_rows) {
        char row0[32];
        snprintf(row0, sizeof row0, "%" PRId64, full);
        otc_cr_mm_rows(c, d, row0, (int)(n_rows - full));
    }
}

/* A preprocessor line, from the line's start. */
static void directive(otc_cr *c, const char *line) {
    int at = c->indent;
    c->indent = 0;
    otc_cr_line(c, "%s", line);
    c->indent = at;
}

/* Every row of the product over the q panel [q0, q1): blocks of `rows` rows, then the rest
 * as one shorter block; `tall`: only blocks of the widest width and half of it (B at least
 * otc_cr_tall_min). */
static void panel_rows(otc_cr *c, const otc_cr_mm *d, int64_t n_rows, int rows, bool tall) {
    int64_t full = n_rows / rows * rows;
    for (int part = 0; part < 2; part++) {
        int height = part ? (int)(n_rows - full) : rows;
        if (height == 0 || (part == 0 && full == 0)) continue;
        if (part == 0) {
            otc_cr_line(c, "for (size_t r0 = 0; r0 < %" PRId64 "; r0 += %d) {", full, rows);
        } else {
            otc_cr_line(c, "{");
            otc_cr_line(c, "    const size_t r0 = %" PRId64 ";", full);
        }
        c->indent++;
        if (tall)
            tall_body(c, d, "r0", height, PANEL);
        else
            rows_body(c, d, "r0", height, PANEL);
        c->indent--;
        otc_cr_line(c, "}");
    }
}

void otc_cr_tall_if(otc_cr *c, bool open) {
    char mac[96], line[128];
    otc_cr_upper(mac, c->name, sizeof mac);
    snprintf(line, sizeof line, "#if %s_TALL_BLOCKS", mac);
    directive(c, open ? line : "#endif");
    c->tall_blocks = true;
}

/* Narrow batches: a block of `cols` of W's contiguous columns from e0 x `k` samples from b0,
 * summed over every q in order from zero, the sums of a sample laid along W's row (the
 * compiler packs them as in one_sample_block); the block's sums go through a local array
 * (contiguous stores the SLP vectoriser starts from) and out transposed. */
static void narrow_block(otc_cr *c, const otc_cr_mm *d, const char *e0, int cols, int k) {
    otc_text t;
    otc_text_init(&t);
    for (int b = 0; b < k; b++) {
        otc_text_puts(&t, "float");
        for (int l = 0; l < cols; l++) otc_text_printf(&t, "%s s%d_%d = 0.0f", l ? "," : "", b, l);
        otc_text_puts(&t, ";");
        flush(c, &t);
    }
    otc_cr_line(c, "for (size_t q = 0; q < %" PRId64 "; q++) {", d->inner);
    c->indent++;
    otc_cr_line(c, "const float *restrict xq = %s + q * S + b0;", d->x);
    otc_cr_line(c, "const float *restrict wq = %s + q * %" PRId64 " + %s;", d->w, d->w_stride, e0);
    for (int b = 0; b < k; b++) {
        otc_text_printf(&t, "{ const float xb = xq[%d];", b);
        for (int l = 0; l < cols; l++) otc_text_printf(&t, " s%d_%d += xb * wq[%d];", b, l, l);
        otc_text_puts(&t, " }");
        flush(c, &t);
    }
    c->indent--;
    otc_cr_line(c, "}");
    otc_cr_line(c, "{");
    c->indent++;
    otc_cr_line(c, "float t[%d][%d];", k, cols);
    for (int b = 0; b < k; b++) {
        for (int l = 0; l < cols; l++)
            otc_text_printf(&t, "%st[%d][%d] = s%d_%d;", l ? " " : "", b, l, b, l);
        flush(c, &t);
    }
    otc_cr_line(c, "for (size_t l = 0; l < %d; l++)", cols);
    otc_cr_line(c, "    for (size_t b = 0; b < %d; b++) %s[(%s + l) * S + b0 + b] = t[b][l];", k,
                d->out, e0);
    c->indent--;
    otc_cr_line(c, "}");
    otc_text_free(&t);
}

/* Every column in blocks of OTC_CR_ONE_COLS (the rest of the columns as one narrower block),
 * each strip of W's columns run over the whole batch while it is in cache: blocks of
 * OTC_CR_NARROW_SAMPLES samples, the last 3 as one overlapping the block before, and blocks
 * of 2 for the last 2 or 1 (overlapping) and for a batch of 2-3 ("=": overlapped samples
 * are written again with the same sums). B >= 2. */
static void narrow_body(otc_cr *c, const otc_cr_mm *d, int64_t n_cols) {
    const int k = OTC_CR_NARROW_SAMPLES;
    int64_t full = n_cols / OTC_CR_ONE_COLS * OTC_CR_ONE_COLS;
    char e0[32];
    snprintf(e0, sizeof e0, "%" PRId64, full);
    for (int part = 0; part < 2; part++) {
        int cols = part ? (int)(n_cols - full) : OTC_CR_ONE_COLS;
        if (cols == 0 || (part == 0 && full == 0)) continue;
        if (part == 0)
            otc_cr_line(c, "for (size_t e0 = 0; e0 < %" PRId64 "; e0 += %d) {", full, cols);
        else
            otc_cr_line(c, "{");
        c->indent++;
        otc_cr_line(c, "for (size_t bs = 0; bs < B;) {");
        c->indent++;
        otc_cr_line(c, "if (B - bs >= %d && B >= %d) {", k - 1, k);
        c->indent++;
        otc_cr_line(c, "const size_t b0 = B - bs >= %d ? bs : B - %d;", k, k);
        narrow_block(c, d, part ? e0 : "e0", cols, k);
        otc_cr_line(c, "bs = b0 + %d;", k);
        c->indent--;
        otc_cr_line(c, "} else {");
        c->indent++;
        otc_cr_line(c, "const size_t b0 = B - bs >= 2 ? bs : B - 2;");
        narrow_block(c, d, part ? e0 : "e0", cols, 2);
        otc_cr_line(c, "bs = b0 + 2;");
        c->indent--;
        otc_cr_line(c, "}");
        c->indent--;
        otc_cr_line(c, "}");
        c->indent--;
        otc_cr_line(c, "}");
    }
}

void otc_cr_narrow_if(otc_cr *c, const otc_cr_mm *d) {
    otc_cr_line(c, "if (B > 1 && B < %d && B %% %d != 0) {", widest(d), OTC_CR_LANES);
}

void otc_cr_mm_narrow(otc_cr *c, const otc_cr_mm *d, int64_t n_cols) {
    otc_cr_fn f;
    otc_cr_mm h;
    char params[160];
    mm_helper_begin(c, &f, params, sizeof params, "size_t B, size_t S", d, &h);
    narrow_body(c, &h, n_cols);
    int id = helper_end(c, &f, params, NULL);
    otc_cr_line(c, "%s_mm%d(B, S, %s, %s, %s);", c->name, id, d->x, d->w, d->out);
}

void otc_cr_mm_panels(otc_cr *c, const otc_cr_mm *d, int64_t n_rows, int rows) {
    if (rows < 1) rows = 1;
    otc_cr_fn f;
    otc_cr_mm h;
    char params[160];
    mm_helper_begin(c, &f, params, sizeof params, "size_t B, size_t S", d, &h);
    if (!h.w_by_out) {
        otc_cr_narrow_if(c, &h);
        c->indent++;
        narrow_body(c, &h, n_rows);
        otc_cr_line(c, "return;");
        c->indent--;
        otc_cr_line(c, "}");
    }
    otc_cr_line(c, "for (size_t e = 0; e < %" PRId64 "; e++)", n_rows);
    otc_cr_line(c, "    for (size_t b = 0; b < B; b++) out[e * S + b] = 0.0f;");
    otc_cr_line(c, "const size_t qn = B < %d ? %d / B : %d;",
                OTC_PLAN_PANEL_FLOATS / OTC_PLAN_PANEL_MIN, OTC_PLAN_PANEL_FLOATS,
                OTC_PLAN_PANEL_MIN);
    otc_cr_line(c, "for (size_t q0 = 0; q0 < %" PRId64 "; q0 += qn) {", d->inner);
    c->indent++;
    otc_cr_line(c, "const size_t q1 = q0 + qn < %" PRId64 " ? q0 + qn : %" PRId64 ";", d->inner,
                d->inner);
    /* Blocks as tall as OTC_PLAN_TALL times the plan's only at the widest width and half of
     * it (the 33x33 substrate at batch 11 ran its 4-row blocks of 8 samples at 0.6x the
     * interpreter); below, gcc fused fewer multiply-adds in tall ones (other bits). */
    otc_cr_tall_if(c, true);
    otc_cr_line(c, "if (B >= %d) {", otc_cr_tall_min(&h));
    c->indent++;
    panel_rows(c, &h, n_rows, OTC_PLAN_TALL * rows, true);
    c->indent--;
    otc_cr_line(c, "} else");
    otc_cr_tall_if(c, false);
    otc_cr_line(c, "{");
    c->indent++;
    panel_rows(c, &h, n_rows, rows, false);
    c->indent--;
    otc_cr_line(c, "}");
    c->indent--;
    otc_cr_line(c, "}");
    int id = helper_end(c, &f, params, NULL);
    otc_cr_line(c, "%s_mm%d(B, S, %s, %s, %s);", c->name, id, d->x, d->w, d->out);
}

void otc_cr_mm_one_sample(otc_cr *c, const otc_cr_mm *d, int64_t n_cols) {
    otc_cr_fn f;
    otc_cr_mm h;
    char params[160];
    mm_helper_begin(c, &f, params, sizeof params, "size_t S", d, &h);
    /* A W larger than OTC_CR_ONE_CACHED floats: the blocks run over a chunk of
     * OTC_CR_ONE_CHUNK floats of W's rows at a time (contiguous memory, in cache for every
     * block) and carry their sums in out between chunks; each sum still adds q in order. */
    int64_t rows = OTC_CR_ONE_CHUNK / (n_cols > 0 ? n_cols : 1);
    if (rows < OTC_CR_ONE_MIN_ROWS) rows = OTC_CR_ONE_MIN_ROWS;
    char k[32], r[32];
    snprintf(k, sizeof k, "%" PRId64, d->inner);
    snprintf(r, sizeof r, "%" PRId64, rows);
    if (n_cols * d->inner <= OTC_CR_ONE_CACHED || rows >= d->inner) {
        one_sample_columns(c, &h, n_cols, "0", k, false);
    } else { /* one copy of the blocks (a first chunk of its own doubled cc's time) */
        otc_cr_line(c, "for (size_t e = 0; e < %" PRId64 "; e++) out[e * S] = 0.0f;", n_cols);
        otc_cr_line(c, "for (size_t q0 = 0; q0 < %s; q0 += %s) {", k, r);
        c->indent++;
        otc_cr_line(c, "const size_t q1 = q0 + %s < %s ? q0 + %s : %s;", r, k, r, k);
        one_sample_columns(c, &h, n_cols, "q0", "q1", true);
        c->indent--;
        otc_cr_line(c, "}");
    }
    int id = helper_end(c, &f, params, NULL);
    /* Without a fixed layout S is B, here 1: said so, the compiler drops the strides (cc's
     * time on LeNet's file: 60% more without). */
    otc_cr_line(c, "%s_mm%d(%s, %s, %s, %s);", c->name, id, c->fixed_batch > 0 ? "S" : "1", d->x,
                d->w, d->out);
}

void otc_cr_mm_weight_grad(otc_cr *c, const otc_cr_gw *d) {
    otc_cr_fn f;
    otc_cr_fn_begin(c, &f);
    otc_cr_gw h = *d;
    h.a = "a";
    h.g = "gr";
    h.gw = "gw";
    weight_grad_body(c, &h);
    int id = helper_end(c, &f,
                        "size_t B, size_t S, const float *restrict a, "
                        "const float *restrict gr, float *restrict gw",
                        NULL);
    otc_cr_line(c, "%s_mm%d(B, S, %s, %s, %s);", c->name, id, d->a, d->g, d->gw);
}

void otc_cr_mm_prelude(otc_cr *c, otc_text *out) {
    char mac[96];
    otc_cr_upper(mac, c->name, sizeof mac);
    if (c->n_loop_fns > 0)
        otc_text_printf(out,
                        "/* Loop programs as functions: one copy however many bodies run "
                        "them. */\n#if defined(__GNUC__)\n"
                        "#define %s_KERNEL static __attribute__((noinline))\n#else\n"
                        "#define %s_KERNEL static\n#endif\n%s",
                        mac, mac, c->n_helpers == 0 ? "\n" : "");
    if (c->n_helpers == 0) return;
    otc_text_printf(out,
                    "/* Dense products: register blocks the SLP vectoriser packs; gcc's loop "
                    "vectoriser kept out. */\n"
                    "#if defined(__GNUC__) && !defined(__clang__)\n"
                    "#define %s_BLOCKED __attribute__((optimize(\"no-tree-loop-vectorize\")))\n"
                    "#else\n#define %s_BLOCKED\n#endif\n",
                    mac, mac);
    if (c->tall_blocks)
        otc_text_printf(out,
                        "/* A large product's blocks %d times as tall where the compiler has 32 "
                        "vector registers\n * (AVX-512); define it 0 or 1 to choose. */\n"
                        "#ifndef %s_TALL_BLOCKS\n#if defined(__AVX512F__)\n"
                        "#define %s_TALL_BLOCKS 1\n#else\n#define %s_TALL_BLOCKS 0\n#endif\n"
                        "#endif\n",
                        OTC_PLAN_TALL, mac, mac, mac);
    otc_text_puts(out, "\n");
}
