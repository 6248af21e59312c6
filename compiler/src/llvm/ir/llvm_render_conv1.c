/* The LLVM renderer's convolution for a batch of one sample: vectors along each row's output
 * pixels instead of along the (absent) other samples. */
#include "llvm_render.h"
#include "otc/loops.h"

#define B (r->ir.b)

/* Floats of one sample's input the stack copy may hold. */
enum { CONV1_MAX_FLOATS = 1 << 15 };

/* Taps of a row times blocks of pixels in one unrolled body, at most. */
enum { CONV1_MAX_UNROLLED = 64 };

typedef otc_conv1_geometry geometry;

/* The geometry of conv2d node id when this path can run it: stride and dilation 1 (each
 * block of output pixels reads contiguous inputs, otc_conv1_geometry_of), the input small
 * enough to copy to the stack. */
static bool geometry_of(const otc_llvm_r *r, otc_id id, geometry *o) {
    geometry g;
    /* one lane: the batched code pads nothing */
    if (r->o.lanes < 2 || !otc_conv1_geometry_of(r->g, id, &g)) return false;
    /* the taps and blocks of pixels are unrolled: a bounded body */
    int64_t blocks = (g.OW + r->o.lanes - 1) / r->o.lanes;
    if (g.KW * blocks > CONV1_MAX_UNROLLED) return false;
    if (g.C * g.H * g.W + g.pw + (blocks + 1) * r->o.lanes + g.KW > CONV1_MAX_FLOATS) return false;
    *o = g;
    return true;
}

bool otc_lv_conv_one_sample_fits(const otc_llvm_r *r, otc_id id) {
    geometry g;
    return geometry_of(r, id, &g);
}

static LLVMValueRef mul(otc_llvm_r *r, LLVMValueRef a, int64_t k) {
    return LLVMBuildMul(B, a, otc_lv_i64(r, k), "");
}

static LLVMValueRef add(otc_llvm_r *r, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildAdd(B, a, b, "");
}

static LLVMValueRef imax(otc_llvm_r *r, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, a, b, ""), a, b, "");
}

static LLVMValueRef imin(otc_llvm_r *r, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, b, ""), a, b, "");
}

/* y = conv(x) for sample 0: the input copied from the samples' layout (element e at e * S)
 * to a stack array; per U output channels, output row and block of W pixels, U vector sums
 * start at the bias and add input channel by channel, tap by tap (the rows a tap reads
 * inside the input only, the columns outside it kept out lane by lane), the order the
 * batched program (otc_plan_lower) sums in; then each pixel stored to the layout (B = 1:
 * S = W, one vector per element, sample 0's lane). */
void otc_lv_conv_one_sample(otc_llvm_r *r, otc_id id) {
    geometry g;
    if (!geometry_of(r, id, &g)) return;
    const otc_node *nd = otc_graph_node(r->g, id);
    int W = r->o.lanes;
    int64_t Cg = g.C / g.G, OCg = g.OC / g.G, KK = g.KH * g.KW, HW = g.H * g.W;
    int64_t blocks = (g.OW + W - 1) / W;
    LLVMValueRef S = r->a[OTC_LA_STRIDE];
    LLVMValueRef xb = otc_lv_value_base(r, nd->inputs[0]), wb = otc_lv_value_base(r, nd->inputs[1]);
    LLVMValueRef bb = nd->n_inputs > 2 ? otc_lv_value_base(r, nd->inputs[2]) : NULL;
    LLVMValueRef yb = otc_lv_value_base(r, id);
    /* The copy, from float pw on: reads left of a row's start or past the last row's end
     * stay inside the array (their lanes are never kept). */
    int64_t front = g.pw, n = front + g.C * HW + blocks * W + g.KW + W;
    LLVMValueRef xa = otc_lv_slot(r, LLVMArrayType(r->ir.f32, (unsigned)n));
    LLVMValueRef xs = otc_lv_gep(r, xa, otc_lv_i64(r, front));
    otc_llvm_loop cp = {0};
    otc_lv_loop_begin(r, &cp, otc_lv_i64(r, g.C * HW));
    LLVMValueRef v = otc_lv_load(r, r->ir.f32, otc_lv_gep(r, xb, LLVMBuildMul(B, cp.i, S, "")));
    otc_lv_store(r, v, otc_lv_gep(r, xs, cp.i));
    otc_lv_loop_end(r, &cp);
    LLVMValueRef acc[OTC_CONV1_CHANNELS], oc[OTC_CONV1_CHANNELS];
    otc_llvm_loop ob = {0}, oh = {0}, c = {0}, kh = {0};
    otc_lv_loop_begin(r, &ob, otc_lv_i64(r, g.OC / g.U));
    LLVMValueRef oc0 = mul(r, ob.i, g.U);
    LLVMValueRef grp = LLVMBuildSDiv(B, oc0, otc_lv_i64(r, OCg), "");
    for (int64_t u = 0; u < g.U; u++) oc[u] = add(r, oc0, otc_lv_i64(r, u));
    otc_lv_loop_begin(r, &oh, otc_lv_i64(r, g.OH));
    /* taps kh with 0 <= oh + kh - ph < H */
    LLVMValueRef lo = imax(r, otc_lv_i64(r, 0), LLVMBuildSub(B, otc_lv_i64(r, g.ph), oh.i, ""));
    LLVMValueRef hi =
        imin(r, otc_lv_i64(r, g.KH), LLVMBuildSub(B, otc_lv_i64(r, g.H + g.ph), oh.i, ""));
    for (int64_t k = 0; k < blocks; k++) {
        for (int64_t u = 0; u < g.U; u++) {
            LLVMValueRef b0 = bb ? otc_lv_load(r, r->ir.f32, otc_lv_gep(r, bb, oc[u]))
                                 : LLVMConstReal(r->ir.f32, 0.0);
            acc[u] = otc_lv_splat(r, b0);
        }
        /* the sums live in slots across the channel and row loops */
        LLVMValueRef slot[OTC_CONV1_CHANNELS];
        for (int64_t u = 0; u < g.U; u++) {
            slot[u] = otc_lv_slot(r, r->vec);
            otc_lv_store(r, acc[u], slot[u]);
        }
        otc_lv_loop_begin(r, &c, otc_lv_i64(r, Cg));
        LLVMValueRef ch = add(r, mul(r, grp, Cg), c.i);
        otc_lv_loop_begin(r, &kh, LLVMBuildSub(B, hi, lo, ""));
        LLVMValueRef tkh = add(r, kh.i, lo);
        LLVMValueRef row = add(r, add(r, mul(r, ch, HW), mul(r, add(r, oh.i, tkh), g.W)),
                               otc_lv_i64(r, -g.ph * g.W + k * W - g.pw));
        for (int64_t u = 0; u < g.U; u++) acc[u] = otc_lv_load(r, r->vec, slot[u]);
        for (int64_t kw = 0; kw < g.KW; kw++) {
            LLVMValueRef xv =
                otc_lv_load(r, r->vec, otc_lv_gep(r, xs, add(r, row, otc_lv_i64(r, kw))));
            /* lanes j of block k read column k W + j + kw - pw: inside the row or not */
            LLVMValueRef bits[64];
            bool all = true, none = true;
            for (int j = 0; j < W; j++) {
                int64_t col = k * W + j + kw - g.pw;
                bool in = col >= 0 && col < g.W && k * W + j < g.OW;
                bits[j] = LLVMConstInt(r->ir.i1, in, 0);
                all &= in;
                none &= !in;
            }
            if (none) continue;
            LLVMValueRef wi = add(r, mul(r, c.i, KK), add(r, mul(r, tkh, g.KW), otc_lv_i64(r, kw)));
            for (int64_t u = 0; u < g.U; u++) {
                LLVMValueRef wv = otc_lv_load(
                    r, r->ir.f32, otc_lv_gep(r, wb, add(r, mul(r, oc[u], Cg * KK), wi)));
                LLVMValueRef s = otc_llvm_fma(&r->ir, xv, otc_lv_splat(r, wv), acc[u]);
                acc[u] =
                    all ? s : LLVMBuildSelect(B, LLVMConstVector(bits, (unsigned)W), s, acc[u], "");
            }
        }
        for (int64_t u = 0; u < g.U; u++) otc_lv_store(r, acc[u], slot[u]);
        otc_lv_loop_end(r, &kh);
        otc_lv_loop_end(r, &c);
        int64_t valid = g.OW - k * W < W ? g.OW - k * W : W;
        for (int64_t u = 0; u < g.U; u++) {
            LLVMValueRef sum = otc_lv_load(r, r->vec, slot[u]);
            LLVMValueRef e0 = add(r, add(r, mul(r, oc[u], g.OH * g.OW), mul(r, oh.i, g.OW)),
                                  otc_lv_i64(r, k * W));
            for (int64_t j = 0; j < valid; j++) {
                /* the padding samples' lanes zero: later kernels compute on them, and a
                   gradient product adds them times a zero gradient, which NaN would spoil */
                LLVMValueRef lane =
                    LLVMBuildExtractElement(B, sum, LLVMConstInt(r->ir.i32, (unsigned)j, 0), "");
                LLVMValueRef one = LLVMBuildInsertElement(B, LLVMConstNull(r->vec), lane,
                                                          LLVMConstInt(r->ir.i32, 0, 0), "");
                LLVMValueRef e = add(r, e0, otc_lv_i64(r, j));
                otc_lv_store(r, one, otc_lv_gep(r, yb, LLVMBuildMul(B, e, S, "")));
            }
        }
    }
    otc_lv_loop_end(r, &oh);
    otc_lv_loop_end(r, &ob);
}
