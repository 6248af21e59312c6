/* Weight-only storage in the emitted C: the weights as IEEE half or per-channel int8
 * (otc/quant.h) and the function that decodes them into the workspace, to the floats
 * otc_weights_round gives the host. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "render_c_internal.h"

/* A parameter as the file stores it: its int8 layout (channels 0: kept as f32). */
typedef struct {
    const float *w;
    int64_t n, channels, inner;
} stored;

static stored stored_param(const otc_cr *c, const otc_plan *p, int i, otc_weight_storage mode) {
    const otc_node *nd = otc_graph_node(p->graph, p->params[i]);
    stored s = {nd->value->data, (int64_t)nd->value->size, 0, 0};
    if (mode == OTC_WEIGHTS_INT8 &&
        !otc_weights_int8_layout(c->g, p->params[i], &s.channels, &s.inner))
        s.channels = 0;
    return s;
}

/* "static const TYPE NAME_SUFFIX[n] = {...};" opened and closed around the values. */
static void array_open(otc_cr *c, const char *type, const char *suffix, int64_t n) {
    otc_text_printf(c->sb, "static const %s %s_%s[%" PRId64 "] = {", type, c->name, suffix,
                    n > 0 ? n : 1);
    if (n == 0) otc_text_puts(c->sb, "0");
}

static void array_close(otc_cr *c) {
    otc_text_puts(c->sb, "\n};\n\n");
}

static void item(otc_cr *c, int64_t *k, const char *text) {
    otc_text_puts(c->sb, (*k)++ % 10 == 0 ? "\n    " : " ");
    otc_text_printf(c->sb, "%s,", text);
}

static void write_f16(otc_cr *c, const otc_plan *p) {
    array_open(c, "uint16_t", "weights_f16", p->param_floats);
    int64_t k = 0;
    char lit[16];
    for (int i = 0; i < p->n_params; i++) {
        stored s = stored_param(c, p, i, OTC_WEIGHTS_F16);
        for (int64_t j = 0; j < s.n; j++) {
            uint16_t h = otc_f16_from_f32(s.w[j]);
            if ((h & 0x7c00u) == 0x7c00u && !c->st) {
                char lab[64];
                c->st = otc_fail(OTC_ERR_UNSUPPORTED,
                                 "emit-c: parameter %s element %" PRId64 " is %g, past f16's "
                                 "largest value (65504): store it in f32 or int8",
                                 otc_graph_node_label(p->graph, p->params[i], lab, sizeof lab), j,
                                 (double)s.w[j]);
            }
            snprintf(lit, sizeof lit, "0x%04x", (unsigned)h);
            item(c, &k, lit);
        }
    }
    array_close(c);
}

static void write_int8(otc_cr *c, const otc_plan *p) {
    int64_t nq = 0, ns = 0, nf = 0;
    for (int i = 0; i < p->n_params; i++) {
        stored s = stored_param(c, p, i, OTC_WEIGHTS_INT8);
        if (s.channels > 0) {
            nq += s.n;
            ns += s.channels;
        } else {
            nf += s.n;
        }
    }
    /* Three passes over the parameters, one per array: the int8 values, their scales, and
     * the parameters kept in f32. */
    char lit[48];
    for (int pass = 0; pass < 3; pass++) {
        static const char *const type[] = {"int8_t", "float", "float"};
        static const char *const suffix[] = {"weights_q", "weight_scales", "weights_f32"};
        int64_t k = 0;
        array_open(c, type[pass], suffix[pass], pass == 0 ? nq : pass == 1 ? ns : nf);
        for (int i = 0; i < p->n_params; i++) {
            stored s = stored_param(c, p, i, OTC_WEIGHTS_INT8);
            if ((pass == 2) != (s.channels == 0)) continue;
            if (pass == 2) {
                for (int64_t j = 0; j < s.n; j++) item(c, &k, otc_cr_float(c, lit, s.w[j]));
                continue;
            }
            int8_t *q = malloc((size_t)s.n);
            float *scale = malloc((size_t)s.channels * sizeof *scale);
            if (!q || !scale) {
                c->sb->failed = true;
            } else {
                otc_weights_int8_quantize(s.w, s.n, s.channels, s.inner, q, scale);
                for (int64_t j = 0; pass == 0 && j < s.n; j++) {
                    snprintf(lit, sizeof lit, "%d", q[j]);
                    item(c, &k, lit);
                }
                for (int64_t j = 0; pass == 1 && j < s.channels; j++)
                    item(c, &k, otc_cr_float(c, lit, scale[j]));
            }
            free(q);
            free(scale);
        }
        array_close(c);
    }
    /* Per parameter, in the workspace's order: its floats, its output channels (0: f32)
     * and the run of weights per channel. */
    otc_text_printf(c->sb,
                    "/* Per parameter: floats, output channels (0: stored as f32), weights per "
                    "channel. */\nstatic const size_t %s_weight_runs[%d][3] = {",
                    c->name, p->n_params > 0 ? p->n_params : 1);
    if (p->n_params == 0) otc_text_puts(c->sb, "{0, 0, 0}");
    for (int i = 0; i < p->n_params; i++) {
        stored s = stored_param(c, p, i, OTC_WEIGHTS_INT8);
        otc_text_printf(c->sb, "\n    {%" PRId64 ", %" PRId64 ", %" PRId64 "},", s.n, s.channels,
                        s.inner);
    }
    array_close(c);
}

bool otc_cr_finite_weights(otc_cr *c, const otc_plan *p) {
    for (int i = 0; i < p->n_params && !c->st; i++) {
        const otc_node *nd = otc_graph_node(p->graph, p->params[i]);
        for (size_t j = 0; j < nd->value->size; j++)
            if (!isfinite(nd->value->data[j])) {
                char lab[64];
                c->st = otc_fail(OTC_ERR_UNSUPPORTED,
                                 "emit-c: parameter %s element %zu is %g; the generated code "
                                 "needs finite weights",
                                 otc_graph_node_label(p->graph, p->params[i], lab, sizeof lab), j,
                                 (double)nd->value->data[j]);
                return false;
            }
    }
    return !c->st;
}

void otc_cr_stored_weights(otc_cr *c, const otc_plan *p, otc_weight_storage mode) {
    if (!otc_cr_finite_weights(c, p)) return;
    if (mode == OTC_WEIGHTS_F16)
        write_f16(c, p);
    else
        write_int8(c, p);
}

void otc_cr_decode_weights(otc_cr *c, const otc_plan *p, otc_weight_storage mode) {
    otc_text *sb = c->sb;
    const char *N = c->name;
    otc_text_printf(sb,
                    "/* The stored weights decoded into w, as the host decodes them (otc "
                    "--quantized). */\nstatic void %s_decode_weights(float *restrict w) {\n",
                    N);
    if (mode == OTC_WEIGHTS_F16) {
        char fb[96];
        otc_cr_math(c, OTC_CRM_BASICS, fb, sizeof fb);
        otc_text_printf(
            sb,
            "    for (size_t i = 0; i < %" PRId64 "; i++) {\n"
            "        const unsigned int h = %s_weights_f16[i], e = (h >> 10) & 0x1fu;\n"
            "        const unsigned int m = h & 0x3ffu, sign = (h & 0x8000u) << 16;\n"
            "        const float sub = (float)m * 0x1p-24f; /* e == 0: subnormal, exact */\n"
            "        w[i] = e == 0 ? (sign ? -sub : sub)\n"
            "                      : %s_from_bits(sign | ((e + 112u) << 23) | (m << 13));\n"
            "    }\n}\n\n",
            p->param_floats, N, N);
        return;
    }
    otc_text_printf(sb,
                    "    const int8_t *q = %s_weights_q;\n"
                    "    const float *f = %s_weights_f32, *s = %s_weight_scales;\n"
                    "    for (size_t p = 0; p < %d; p++) {\n"
                    "        const size_t n = %s_weight_runs[p][0], ch = %s_weight_runs[p][1];\n"
                    "        const size_t inner = %s_weight_runs[p][2];\n"
                    "        if (ch == 0) {\n"
                    "            for (size_t j = 0; j < n; j++) *w++ = *f++;\n"
                    "            continue;\n"
                    "        }\n"
                    "        for (size_t j = 0; j < n; j += ch * inner)\n"
                    "            if (inner == 1) /* a matmul's row: a loop that vectorises */\n"
                    "                for (size_t c = 0; c < ch; c++) *w++ = (float)*q++ * s[c];\n"
                    "            else\n"
                    "                for (size_t c = 0; c < ch; c++)\n"
                    "                    for (size_t k = 0; k < inner; k++) *w++ = (float)*q++ "
                    "* s[c];\n"
                    "        s += ch;\n"
                    "    }\n}\n\n",
                    N, N, N, p->n_params, N, N, N);
}
