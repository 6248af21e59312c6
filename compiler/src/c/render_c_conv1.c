/* The C renderer's convolution for a batch of one sample: sums held in locals per block of a
 * row's output pixels, as the JIT's llvm_render_conv1.c does, instead of tap by tap in memory. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "otc/loops.h"
#include "render_c_internal.h"

/* Pixels of a block: a vector the compiler keeps each channel's sums in (OTC_CR_LANES). */
enum { CONV1_PIXELS = OTC_CR_LANES };

typedef struct {
    otc_conv1_geometry d;
    int64_t lo, hi; /* output columns whose taps are all inside the input */
} geometry;

/* Node id's geometry when this path runs it: a stride-1 conv2d (a block of output pixels
 * reads contiguous inputs, otc_conv1_geometry_of) padded by less than its kernel. */
static bool geometry_of(const otc_cr *c, otc_id id, geometry *o) {
    otc_conv1_geometry g;
    if (!otc_conv1_geometry_of(c->g, id, &g)) return false;
    /* padding under a kernel's size keeps a row's and a column's bounds on taps positive */
    if (g.KH < 1 || g.KW < 1 || g.ph >= g.KH || g.pw >= g.KW || g.C % g.G || g.OC % g.G)
        return false;
    o->d = g;
    /* column ow reads input columns ow - pw .. ow - pw + KW - 1 */
    o->lo = g.pw < g.OW ? g.pw : g.OW;
    o->hi = g.W + g.pw - g.KW + 1 < g.OW ? g.W + g.pw - g.KW + 1 : g.OW;
    if (o->hi - o->lo < CONV1_PIXELS) o->lo = o->hi = 0; /* no full block: all scalar */
    return true;
}

bool otc_cr_conv_one_sample_fits(const otc_cr *c, otc_id id) {
    geometry g;
    return geometry_of(c, id, &g);
}

/* Names of the node's buffers (declared by the caller: otc_cr_pointer). */
typedef struct {
    char x[16], w[16], b[16], y[16], fma[96];
} names;

/* Opens the loops over input channels and the rows of taps inside the input (kh0 .. kh1, set
 * per output row), and sets xr (the row's first input element, column 0) and wr (channel
 * oc0's row of taps). */
static void taps_begin(otc_cr *c, const geometry *g, const names *n) {
    int64_t cg = g->d.C / g->d.G;
    otc_cr_line(c, "for (size_t ci = 0; ci < %" PRId64 "; ci++) {", cg);
    c->indent++;
    otc_cr_line(c, "for (size_t kh = kh0; kh < kh1; kh++) {");
    c->indent++;
    otc_cr_line(c,
                "const float *restrict xr = %s + (grp * %" PRId64 " + ci) * %" PRId64
                " + (oh + kh - %" PRId64 ") * %" PRId64 ";",
                n->x, cg, g->d.H * g->d.W, g->d.ph, g->d.W);
    otc_cr_line(c,
                "const float *restrict wr = %s + (oc0 * %" PRId64 " + ci) * %" PRId64
                " + kh * %" PRId64 ";",
                n->w, cg, g->d.KH * g->d.KW, g->d.KW);
}

static void taps_end(otc_cr *c) {
    otc_cr_close(c, 2);
}

/* U sums per pixel of each full block (all taps inside the input), blocks of CONV1_PIXELS
 * from column lo, the last one ending at hi (overlapping its neighbour: the same sums, the
 * same values stored twice). */
static void blocks(otc_cr *c, const geometry *g, const names *n) {
    int64_t nb = (g->hi - g->lo + CONV1_PIXELS - 1) / CONV1_PIXELS, U = g->d.U, P = CONV1_PIXELS;
    int64_t wstep = g->d.C / g->d.G * g->d.KH * g->d.KW; /* floats between two channels' weights */
    otc_cr_line(c, "for (size_t k = 0; k < %" PRId64 "; k++) {", nb);
    c->indent++;
    if (nb == 1)
        otc_cr_line(c, "const size_t ow0 = %" PRId64 " + k;", g->lo);
    else
        otc_cr_line(c,
                    "const size_t ow0 = k + 1 < %" PRId64 " ? %" PRId64 " + k * %" PRId64
                    " : %" PRId64 ";",
                    nb, g->lo, P, g->hi - P);
    for (int64_t u = 0; u < U; u++) otc_cr_line(c, "float a%" PRId64 "[%" PRId64 "];", u, P);
    otc_cr_line(c, "for (size_t j = 0; j < %" PRId64 "; j++) {", P);
    c->indent++;
    for (int64_t u = 0; u < U; u++)
        if (n->b[0])
            otc_cr_line(c, "a%" PRId64 "[j] = %s[oc0 + %" PRId64 "];", u, n->b, u);
        else
            otc_cr_line(c, "a%" PRId64 "[j] = 0.0f;", u);
    otc_cr_close(c, 1);
    taps_begin(c, g, n);
    otc_cr_line(c, "const float *restrict xp = xr + ow0 - %" PRId64 ";", g->d.pw);
    for (int64_t kw = 0; kw < g->d.KW; kw++) {
        otc_cr_line(c, "for (size_t j = 0; j < %" PRId64 "; j++) {", P);
        c->indent++;
        for (int64_t u = 0; u < U; u++)
            otc_cr_line(
                c, "a%" PRId64 "[j] = %s(xp[j + %" PRId64 "], wr[%" PRId64 "], a%" PRId64 "[j]);",
                u, n->fma, kw, u * wstep + kw, u);
        otc_cr_close(c, 1);
    }
    taps_end(c);
    otc_cr_line(c, "for (size_t j = 0; j < %" PRId64 "; j++) {", P);
    c->indent++;
    for (int64_t u = 0; u < U; u++)
        otc_cr_line(c,
                    "%s[(oc0 + %" PRId64 ") * %" PRId64 " + oh * %" PRId64 " + ow0 + j] = a%" PRId64
                    "[j];",
                    n->y, u, g->d.OH * g->d.OW, g->d.OW, u);
    otc_cr_close(c, 2);
}

/* Columns [from, to) one at a time, U scalar sums, the taps inside the input only. */
static void columns(otc_cr *c, const geometry *g, const names *n, int64_t from, int64_t to) {
    if (from >= to) return;
    int64_t U = g->d.U, wstep = g->d.C / g->d.G * g->d.KH * g->d.KW;
    otc_cr_line(c, "for (size_t ow = %" PRId64 "; ow < %" PRId64 "; ow++) {", from, to);
    c->indent++;
    if (g->d.pw) /* (no padding: no "ow < 0", which -Wtype-limits flags) */
        otc_cr_line(c, "const size_t kw0 = ow < %" PRId64 " ? %" PRId64 " - ow : 0;", g->d.pw,
                    g->d.pw);
    else
        otc_cr_line(c, "const size_t kw0 = 0;");
    otc_cr_line(
        c, "const size_t kw1 = %" PRId64 " - ow < %" PRId64 " ? %" PRId64 " - ow : %" PRId64 ";",
        g->d.W + g->d.pw, g->d.KW, g->d.W + g->d.pw, g->d.KW);
    for (int64_t u = 0; u < U; u++)
        if (n->b[0])
            otc_cr_line(c, "float s%" PRId64 " = %s[oc0 + %" PRId64 "];", u, n->b, u);
        else
            otc_cr_line(c, "float s%" PRId64 " = 0.0f;", u);
    taps_begin(c, g, n);
    otc_cr_line(c, "for (size_t kw = kw0; kw < kw1; kw++) {");
    c->indent++;
    otc_cr_line(c, "const float xv = xr[ow + kw - %" PRId64 "];", g->d.pw);
    for (int64_t u = 0; u < U; u++)
        otc_cr_line(c, "s%" PRId64 " = %s(xv, wr[%" PRId64 " + kw], s%" PRId64 ");", u, n->fma,
                    u * wstep, u);
    otc_cr_close(c, 1);
    taps_end(c);
    for (int64_t u = 0; u < U; u++)
        otc_cr_line(c,
                    "%s[(oc0 + %" PRId64 ") * %" PRId64 " + oh * %" PRId64 " + ow] = s%" PRId64 ";",
                    n->y, u, g->d.OH * g->d.OW, g->d.OW, u);
    otc_cr_close(c, 1);
}

/* y = conv(x) for one sample (S == 1: element e of a value at [e]): per U output channels and
 * output row, the sums start at the bias and add input channel by channel, row of taps by row
 * (those inside the input), tap by tap: the order of the batched program (otc_plan_lower),
 * so the same values. Full blocks of pixels as fixed-length loops over locals the compiler
 * keeps in vector registers; the border columns (and rows narrower than a block) scalar. */
void otc_cr_conv_one_sample(otc_cr *c, otc_id id) {
    geometry g;
    if (!geometry_of(c, id, &g)) return;
    const otc_node *nd = otc_graph_node(c->g, id);
    const otc_plan *p = c->plan;
    names n;
    memset(&n, 0, sizeof n);
    snprintf(n.x, sizeof n.x, "v%d", (int)otc_plan_owner(p, nd->inputs[0]));
    snprintf(n.w, sizeof n.w, "v%d", (int)otc_plan_owner(p, nd->inputs[1]));
    if (nd->n_inputs > 2) snprintf(n.b, sizeof n.b, "v%d", (int)otc_plan_owner(p, nd->inputs[2]));
    snprintf(n.y, sizeof n.y, "v%d", (int)otc_plan_owner(p, id));
    char buf[96];
    otc_cr_math(c, OTC_CRM_BASICS, buf, sizeof buf);
    snprintf(n.fma, sizeof n.fma, "%s_fma", c->name);
    otc_cr_line(c, "for (size_t ob = 0; ob < %" PRId64 "; ob++) {", g.d.OC / g.d.U);
    c->indent++;
    otc_cr_line(c, "const size_t oc0 = ob * %" PRId64 ", grp = oc0 / %" PRId64 ";", g.d.U,
                g.d.OC / g.d.G);
    otc_cr_line(c, "(void)grp;");
    otc_cr_line(c, "for (size_t oh = 0; oh < %" PRId64 "; oh++) {", g.d.OH);
    c->indent++;
    /* rows of taps kh with 0 <= oh + kh - ph < H */
    if (g.d.ph)
        otc_cr_line(c, "const size_t kh0 = oh < %" PRId64 " ? %" PRId64 " - oh : 0;", g.d.ph,
                    g.d.ph);
    else
        otc_cr_line(c, "const size_t kh0 = 0;");
    otc_cr_line(
        c, "const size_t kh1 = %" PRId64 " - oh < %" PRId64 " ? %" PRId64 " - oh : %" PRId64 ";",
        g.d.H + g.d.ph, g.d.KH, g.d.H + g.d.ph, g.d.KH);
    if (g.hi > g.lo) blocks(c, &g, &n);
    columns(c, &g, &n, 0, g.lo);
    columns(c, &g, &n, g.hi > g.lo ? g.hi : 0, g.d.OW);
    otc_cr_close(c, 2);
}
