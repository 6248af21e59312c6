/* `otc new KIND [options] -o MODEL.otm`: an untrained model (MLP, LeNet-style CNN, RNN, LSTM
 * or GRU) made from the command line, initialised as PyTorch initialises its layers, ready
 * for `otc train` and `otc compile`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "otc/otc.h"

const char otc_cmd_new_summary[] = "make an untrained model (mlp, cnn, rnn, lstm, gru)";

#define MAX_LAYERS 64
#define MAX_WIDTH  65536 /* units, channels, inputs: far beyond a model made by hand */

/* "16,16" -> {16, 16}; each a width in 1..MAX_WIDTH. Returns the count or -1. */
static int parse_widths(const char *text, int *out, int cap) {
    int n = 0;
    const char *p = text;
    while (*p) {
        char one[16];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof one || n == cap) return -1;
        memcpy(one, p, len);
        one[len] = '\0';
        if (!otc_cli_parse_int(one, &out[n]) || out[n] < 1 || out[n] > MAX_WIDTH) return -1;
        n++;
        p += len;
        if (*p == ',' && !*++p) return -1; /* a trailing comma */
    }
    return n;
}

/* The activation op named on the command line (relu, tanh, sigmoid, ...), or -1. */
static int activation_op(const char *name) {
    int op = otc_op_from_name(name);
    return op >= OTC_OP_SIGMOID && op <= OTC_OP_IDENTITY ? op : -1;
}

static otc_id activate(otc_graph *g, otc_id x, int op) {
    const otc_op_info *info = otc_op_get((otc_op)op);
    const otc_act_info *act = info && info->act >= 0 ? otc_act_get((otc_act)info->act) : NULL;
    return otc_activation(g, (otc_op)op, x, act ? act->default_a : 0.0f);
}

/* Reads a number after the letter at *p; advances *p. */
static bool spec_number(const char **p, int lo, int hi, int *out) {
    char *end;
    if (**p < '0' || **p > '9') return false;
    long v = strtol(*p, &end, 10);
    if (v < lo || v > hi) return false;
    *out = (int)v;
    *p = end;
    return true;
}

/* One layer of a CNN spec applied to h (see docs/commands.md for the grammar):
 *   c<N>k<K>[s<S>][p<P>]  Conv2d to N channels, kernel K, stride S, padding P, then activation
 *   p<K> / a<K>           max / average pooling, window and stride K
 *   f<N>                  flatten (once) then Linear to N units and the activation */
static otc_id spec_layer(otc_graph *g, otc_id h, const char *tok, int act, otc_rng *rng, int index,
                         char *why, size_t why_len) {
    const char *p = tok + 1;
    char prefix[32];
    int n = 0, k = 0;
    switch (tok[0]) {
    case 'c': {
        otc_conv2d_params cp = {0};
        if (!spec_number(&p, 1, MAX_WIDTH, &n) || *p++ != 'k' || !spec_number(&p, 1, 64, &k)) break;
        if (*p == 's' && (++p, !spec_number(&p, 1, 64, &cp.stride_h))) break;
        if (*p == 'p' && (++p, !spec_number(&p, 0, 64, &cp.pad_h))) break;
        if (*p) break;
        cp.stride_w = cp.stride_h;
        cp.pad_w = cp.pad_h;
        snprintf(prefix, sizeof prefix, "conv%d", index);
        h = otc_conv2d_layer(g, h, n, k, &cp, rng, prefix);
        return h < 0 ? h : activate(g, h, act);
    }
    case 'p':
    case 'a': {
        if (!spec_number(&p, 1, 64, &k) || *p) break;
        otc_pool2d_params pp = {.kernel_h = k, .kernel_w = k};
        snprintf(prefix, sizeof prefix, "pool%d", index);
        return tok[0] == 'p' ? otc_maxpool2d(g, prefix, h, &pp) : otc_avgpool2d(g, prefix, h, &pp);
    }
    case 'f': {
        if (!spec_number(&p, 1, MAX_WIDTH, &n) || *p) break;
        if (otc_graph_node(g, h)->shape.ndim != 2 && (h = otc_flatten(g, h)) < 0) return -1;
        snprintf(prefix, sizeof prefix, "fc%d", index);
        h = otc_linear_torch(g, h, n, rng, prefix);
        return h < 0 ? h : activate(g, h, act);
    }
    default:
        break;
    }
    snprintf(why, why_len, "'%s' is not a layer (c<N>k<K>[s<S>][p<P>], p<K>, a<K> or f<N>)", tok);
    return -2;
}

/* "1x28x28" -> C, H, W. */
static bool parse_chw(const char *text, int chw[3]) {
    const char *p = text;
    for (int i = 0; i < 3; i++) {
        if (!spec_number(&p, 1, MAX_WIDTH, &chw[i])) return false;
        if (i < 2 && *p++ != 'x') return false;
    }
    return *p == '\0';
}

typedef struct {
    const char *kind, *hidden, *activation, *out_activation, *input, *spec;
    int inputs, outputs, layers;
    uint64_t seed;
} new_args;

/* The CNN's body: the spec's layers over an input [B,C,H,W], flattened at the end. */
static otc_id build_cnn(otc_graph *g, const new_args *a, int act, otc_rng *rng) {
    int chw[3];
    if (!a->input || !parse_chw(a->input, chw)) {
        otc_cli_error("new", "cnn needs --input CxHxW (e.g. 1x28x28), each from 1 to %d%s%s%s",
                      MAX_WIDTH, a->input ? ", not '" : "", a->input ? a->input : "",
                      a->input ? "'" : "");
        return -2;
    }
    otc_shape s = {4, {OTC_BATCH, chw[0], chw[1], chw[2]}};
    otc_id h = otc_input(g, "x", s);
    if (h < 0 || !a->spec) {
        if (!a->spec) otc_cli_error("new", "cnn needs --spec LAYERS (e.g. c6k5-p2-c16k5-p2-f120)");
        return -2;
    }
    char spec[512];
    if (strlen(a->spec) >= sizeof spec) {
        otc_cli_error("new", "--spec is longer than %zu characters", sizeof spec - 1);
        return -2;
    }
    strcpy(spec, a->spec);
    int index = 0;
    for (char *save = NULL, *tok = strtok_r(spec, "-", &save); tok;
         tok = strtok_r(NULL, "-", &save)) {
        char why[160];
        otc_id next = spec_layer(g, h, tok, act, rng, ++index, why, sizeof why);
        if (next == -2) {
            char st[160];
            otc_cli_error("new", "--spec: %s", otc_cli_printable(why, st, sizeof st));
            return -2;
        }
        if (next < 0) {
            char st[160];
            otc_cli_error("new", "--spec: layer %d ('%s'): %s", index,
                          otc_cli_printable(tok, st, sizeof st), otc_last_error());
            return -2;
        }
        h = next;
    }
    if (index == 0) {
        otc_cli_error("new", "--spec names no layer");
        return -2;
    }
    if (otc_graph_node(g, h)->shape.ndim != 2) h = otc_flatten(g, h);
    return h;
}

int otc_cmd_new(int argc, char **argv) {
    new_args a = {.activation = "relu", .outputs = 0, .layers = 1, .seed = 1};
    const char *out = NULL;
    const otc_opt opts[] = {
        {"--inputs", OTC_OPT_RANGE, OTC_RANGE(a.inputs, 1, MAX_WIDTH),
         "N: input features per sample (mlp, rnn, lstm, gru)"},
        {"--input", OTC_OPT_STRING, &a.input, "CxHxW: cnn: the input image, e.g. 1x28x28"},
        {"--hidden", OTC_OPT_STRING, &a.hidden,
         "SIZES: mlp: hidden layer widths, e.g. 16,16 (default: none); rnn, lstm, gru: the "
         "state size H"},
        {"--layers", OTC_OPT_RANGE, OTC_RANGE(a.layers, 1, MAX_LAYERS),
         "L: rnn, lstm, gru: stacked layers (default 1)"},
        {"--spec", OTC_OPT_STRING, &a.spec,
         "LAYERS: cnn: layers joined by '-': c<N>k<K>[s<S>][p<P>] convolution, p<K> max pool, "
         "a<K> average pool, f<N> fully connected (e.g. c6k5-p2-c16k5-p2-f120-f84)"},
        {"--outputs", OTC_OPT_RANGE, OTC_RANGE(a.outputs, 1, MAX_WIDTH),
         "K: output columns (class logits, or values to regress)"},
        {"--activation", OTC_OPT_STRING, &a.activation,
         "NAME: between layers: relu, tanh, sigmoid, elu, ... (default relu)"},
        {"--output-activation", OTC_OPT_STRING, &a.out_activation,
         "NAME: after the last layer (default: none, logits or values)"},
        {"--seed", OTC_OPT_U64, &a.seed, "N: seeds the initial weights (default 1)"},
        {"--out,--output,-o", OTC_OPT_STRING, &out, "FILE.otm: where to save the model"},
    };
    const char *pos[1];
    int rc = otc_cli_parse("new", "mlp|cnn|rnn|lstm|gru [options] -o MODEL.otm", opts,
                           (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    a.kind = pos[0];
    static const char *const kinds[] = {"mlp", "cnn", "rnn", "lstm", "gru"};
    int kind = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(a.kind, kinds[i])) kind = i;
    char sk[64];
    if (kind < 0)
        return otc_cli_error("new", "unknown kind '%s' (mlp, cnn, rnn, lstm or gru)",
                             otc_cli_printable(a.kind, sk, sizeof sk));
    if (!out) return otc_cli_error("new", "missing -o MODEL.otm (try 'otc new --help')");
    if (a.outputs < 1 || a.outputs > MAX_WIDTH)
        return otc_cli_error("new", "--outputs K is required, from 1 to %d", MAX_WIDTH);
    bool cnn = kind == 1, recurrent = kind >= 2;
    if (cnn && (a.inputs != 0 || a.hidden))
        return otc_cli_error("new", "cnn takes --input CxHxW and --spec, not --inputs or --hidden");
    if (!cnn && (a.input || a.spec))
        return otc_cli_error("new", "--input and --spec are for cnn; %s takes --inputs N", a.kind);
    if (!cnn && (a.inputs < 1 || a.inputs > MAX_WIDTH))
        return otc_cli_error("new", "%s needs --inputs N, from 1 to %d", a.kind, MAX_WIDTH);
    if (a.layers != 1 && !recurrent)
        return otc_cli_error("new", "--layers is for rnn, lstm and gru");
    if (a.layers < 1 || a.layers > MAX_LAYERS)
        return otc_cli_error("new", "--layers must be from 1 to %d, not %d", MAX_LAYERS, a.layers);
    int act = activation_op(a.activation);
    int out_act = a.out_activation ? activation_op(a.out_activation) : -1;
    if (act < 0 || (a.out_activation && out_act < 0)) {
        char sa[64];
        return otc_cli_error(
            "new", "unknown activation '%s' (relu, tanh, sigmoid, elu, ...)",
            otc_cli_printable(act < 0 ? a.activation : a.out_activation, sa, sizeof sa));
    }
    int widths[MAX_LAYERS], n_hidden = 0;
    if (a.hidden && (n_hidden = parse_widths(a.hidden, widths, MAX_LAYERS)) < 0)
        return otc_cli_error("new",
                             "--hidden: '%s' is not a list of widths from 1 to %d (at most %d)",
                             otc_cli_printable(a.hidden, sk, sizeof sk), MAX_WIDTH, MAX_LAYERS);
    if (recurrent && n_hidden != 1)
        return otc_cli_error("new", "%s needs --hidden H, one state size from 1 to %d", a.kind,
                             MAX_WIDTH);

    otc_rng rng;
    otc_rng_seed(&rng, a.seed);
    otc_graph *g = otc_graph_new();
    if (!g) return otc_cli_error("new", "out of memory");
    otc_id h;
    if (cnn) {
        h = build_cnn(g, &a, act, &rng);
        if (h == -2) {
            otc_graph_free(g);
            return OTC_EXIT_USAGE;
        }
    } else {
        h = otc_input(g, "x", otc_shape_2d(OTC_BATCH, a.inputs));
        if (recurrent) {
            static const otc_cell cells[] = {OTC_CELL_RNN, OTC_CELL_LSTM, OTC_CELL_GRU};
            h = otc_recurrent(g, cells[kind - 2], h, widths[0], a.layers, &rng, kinds[kind]);
        } else {
            for (int i = 0; i < n_hidden && h >= 0; i++) {
                char prefix[32];
                snprintf(prefix, sizeof prefix, "fc%d", i + 1);
                h = otc_linear_torch(g, h, widths[i], &rng, prefix);
                if (h >= 0) h = activate(g, h, act);
            }
        }
    }
    char last[32];
    snprintf(last, sizeof last, "%s", recurrent ? "fc" : "out");
    if (h >= 0) h = otc_linear_torch(g, h, a.outputs, &rng, last);
    if (h >= 0 && out_act >= 0) h = activate(g, h, out_act);
    if (h < 0 || otc_graph_set_name(g, h, "y") != OTC_OK || otc_graph_mark_output(g, h) != OTC_OK) {
        otc_graph_free(g);
        return otc_cli_error("new", "%s", otc_last_error());
    }
    if (otc_model_save(g, out) != OTC_OK) {
        rc = otc_cli_error_file("new", out);
        otc_graph_free(g);
        return rc;
    }
    size_t params = 0;
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op == OTC_OP_PARAMETER) params += otc_shape_size(nd->shape);
    }
    char so[512];
    printf("wrote %s: %s, %zu parameters, %d output%s%s\n", otc_cli_printable(out, so, sizeof so),
           a.kind, params, a.outputs, a.outputs == 1 ? "" : "s",
           recurrent ? " per time step (train with --sequence)" : "");
    otc_graph_free(g);
    return OTC_EXIT_OK;
}
