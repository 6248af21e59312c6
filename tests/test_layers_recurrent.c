/* Recurrent layers: otc_rnn, otc_lstm and otc_gru against values worked out by hand (one
 * unit, three steps), against a plain C transcription of PyTorch's equations (stacked, wider),
 * against torch.nn itself when tests/recurrent_torch_ref.py can run (the ctest
 * layers_recurrent_torch), their parameters, names and errors. */
#include "harness.h"

#include "otc/executor.h"
#include "otc/layers.h"

#define MAXV 4096

static const char *keys[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};

/* Run x [T][B*in] through the graph's step, output h [T][B*H] (and c of layer 0). */
static void run_steps(otc_graph *g, otc_id x, otc_id h, int T, int B, const float *xs, int in,
                      float *hs, int H) {
    otc_executor *ex = otc_interpreter_new(g, NULL);
    REQUIRE(ex);
    otc_exec_reset_state(ex);
    for (int t = 0; t < T; t++) {
        REQUIRE(otc_exec_set_input(ex, x, xs + (size_t)t * B * in, B) == OTC_OK);
        REQUIRE(otc_exec_forward(ex) == OTC_OK);
        const float *v = NULL;
        REQUIRE(otc_exec_value(ex, h, &v, NULL) == OTC_OK);
        memcpy(hs + (size_t)t * B * H, v, (size_t)B * H * sizeof(float));
    }
    otc_exec_free(ex);
}

static void load(otc_graph *g, const char *key, int layer, const float *v, size_t n) {
    char k[64];
    snprintf(k, sizeof k, "%s_l%d", key, layer);
    otc_status st = otc_recurrent_load_torch(g, "rnn", k, v, n);
    if (st) fprintf(stderr, "%s\n", otc_last_error());
    REQUIRE(st == OTC_OK);
}

/* One unit, one input, three steps; the values by hand from the equations (and equal to
 * torch.nn's for these weights). */
TEST(layers_recurrent_hand_values) {
    const float xs[3] = {1.0f, -1.0f, 0.5f};
    struct {
        otc_cell cell;
        float w[4][4];
        double want[3];
    } cases[3] = {
        {OTC_CELL_RNN, {{0.5f}, {-1.0f}, {0.1f}, {0.2f}}, {0.66403677, -0.69833168, 0.84781516}},
        {OTC_CELL_LSTM,
         {{0.1f, 0.2f, 0.3f, 0.4f},
          {-0.5f, 0.5f, -0.25f, 0.25f},
          {0, 0.1f, 0, -0.1f},
          {0.05f, 0.05f, 0.05f, 0.05f}},
         {0.10490737, -0.01475360, 0.04546205}},
        {OTC_CELL_GRU,
         {{0.3f, -0.2f, 0.6f}, {0.4f, 0.1f, -0.7f}, {0.1f, 0, -0.1f}, {0, 0.2f, 0.3f}},
         {0.29563169, -0.04770647, 0.15015484}},
    };
    for (int c = 0; c < 3; c++) {
        otc_graph *g = otc_graph_new();
        otc_rng rng;
        otc_rng_seed(&rng, 1);
        otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
        otc_id h = otc_recurrent(g, cases[c].cell, x, 1, 1, &rng, "rnn");
        REQUIRE(h >= 0);
        int G = otc_cell_gates(cases[c].cell);
        for (int k = 0; k < 4; k++) load(g, keys[k], 0, cases[c].w[k], (size_t)G);
        float hs[3];
        run_steps(g, x, h, 3, 1, xs, 1, hs, 1);
        for (int t = 0; t < 3; t++) CHECK_NEAR(hs[t], cases[c].want[t], 2e-6);
        otc_graph_free(g);
    }
}

/* ---- PyTorch's equations in plain C (double), weights in PyTorch's layout ---- */
typedef struct {
    otc_cell cell;
    int in, H, L;
    double *w[8][4]; /* per layer: weight_ih, weight_hh, bias_ih, bias_hh */
} ref_net;

static double sigm(double v) {
    return 1.0 / (1.0 + exp(-v));
}

/* One layer step for one sample: h, c updated in place. */
static void ref_cell(const ref_net *r, int l, const double *x, int in, double *h, double *c) {
    int H = r->H, G = otc_cell_gates(r->cell);
    double gi[4 * 64], gh[4 * 64], hn[64];
    for (int j = 0; j < G * H; j++) {
        gi[j] = r->w[l][2][j];
        gh[j] = r->w[l][3][j];
        for (int k = 0; k < in; k++) gi[j] += r->w[l][0][j * in + k] * x[k];
        for (int k = 0; k < H; k++) gh[j] += r->w[l][1][j * H + k] * h[k];
    }
    for (int j = 0; j < H; j++) {
        if (r->cell == OTC_CELL_RNN) {
            hn[j] = tanh(gi[j] + gh[j]);
        } else if (r->cell == OTC_CELL_LSTM) {
            double i = sigm(gi[j] + gh[j]), f = sigm(gi[H + j] + gh[H + j]);
            double gg = tanh(gi[2 * H + j] + gh[2 * H + j]),
                   o = sigm(gi[3 * H + j] + gh[3 * H + j]);
            c[j] = f * c[j] + i * gg;
            hn[j] = o * tanh(c[j]);
        } else {
            double rr = sigm(gi[j] + gh[j]), z = sigm(gi[H + j] + gh[H + j]);
            double n = tanh(gi[2 * H + j] + rr * gh[2 * H + j]);
            hn[j] = (1 - z) * n + z * h[j];
        }
    }
    memcpy(h, hn, (size_t)H * sizeof(double));
}

TEST(layers_recurrent_match_equations) {
    enum { T = 6, B = 3, IN = 3, H = 5 };
    for (int cell = 0; cell < 3; cell++)
        for (int L = 1; L <= 2; L++) {
            otc_graph *g = otc_graph_new();
            otc_rng rng;
            otc_rng_seed(&rng, 7 + (uint64_t)cell);
            otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, IN));
            otc_id h = otc_recurrent(g, (otc_cell)cell, x, H, L, &rng, "rnn");
            REQUIRE(h >= 0);
            ref_net r = {(otc_cell)cell, IN, H, L, {{0}}};
            int G = otc_cell_gates(r.cell);
            static double store[2][4][4 * H * (IN + H)];
            static float tmp[4 * H * (IN + H)];
            for (int l = 0; l < L; l++) {
                size_t n[4] = {(size_t)G * H * (l ? H : IN), (size_t)G * H * H, (size_t)G * H,
                               (size_t)G * H};
                for (int k = 0; k < 4; k++) {
                    /* the layer's own initial values, read in PyTorch's layout */
                    char key[32];
                    snprintf(key, sizeof key, "%s_l%d", keys[k], l);
                    REQUIRE(otc_recurrent_read_torch(g, "rnn", key, tmp, n[k]) == OTC_OK);
                    float bound = 1.0f / sqrtf((float)H);
                    for (size_t i = 0; i < n[k]; i++) {
                        CHECK(fabsf(tmp[i]) <= bound);
                        store[l][k][i] = tmp[i];
                    }
                    r.w[l][k] = store[l][k];
                }
            }
            float xs[T * B * IN], hs[T * B * H];
            for (int i = 0; i < T * B * IN; i++) xs[i] = 2 * otc_rng_uniform(&rng) - 1;
            run_steps(g, x, h, T, B, xs, IN, hs, H);
            for (int b = 0; b < B; b++) {
                double hh[2][H], cc[2][H];
                memset(hh, 0, sizeof hh);
                memset(cc, 0, sizeof cc);
                for (int t = 0; t < T; t++) {
                    double xin[IN];
                    for (int k = 0; k < IN; k++) xin[k] = xs[(t * B + b) * IN + k];
                    ref_cell(&r, 0, xin, IN, hh[0], cc[0]);
                    if (L == 2) ref_cell(&r, 1, hh[0], H, hh[1], cc[1]);
                    for (int j = 0; j < H; j++)
                        CHECK_NEAR(hs[(t * B + b) * H + j], hh[L - 1][j], 2e-6);
                }
            }
            otc_graph_free(g);
        }
}

TEST(layers_recurrent_structure) {
    otc_graph *g = otc_graph_new();
    otc_rng rng;
    otc_rng_seed(&rng, 3);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    REQUIRE(otc_lstm(g, x, 4, 2, &rng, "lstm") >= 0);
    /* PyTorch's names and sizes: weight_ih_l0 [16, 3] stored [3, 16], ... */
    struct {
        const char *name;
        int d0, d1;
    } want[] = {{"lstm.weight_ih_l0", 3, 16}, {"lstm.weight_hh_l0", 4, 16},
                {"lstm.bias_ih_l0", 16, 0},   {"lstm.bias_hh_l0", 16, 0},
                {"lstm.weight_ih_l1", 4, 16}, {"lstm.weight_hh_l1", 4, 16}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        otc_id p = otc_graph_find(g, want[i].name);
        REQUIRE(p >= 0);
        otc_shape s = otc_graph_node(g, p)->shape;
        CHECK(s.dim[0] == want[i].d0 && (want[i].d1 == 0 ? s.ndim == 1 : s.dim[1] == want[i].d1));
    }
    const char *delays[] = {"lstm.h_l0", "lstm.c_l0", "lstm.h_l1", "lstm.c_l1"};
    for (int i = 0; i < 4; i++) {
        otc_id d = otc_graph_find(g, delays[i]);
        REQUIRE(d >= 0);
        CHECK(otc_graph_node(g, d)->op == OTC_OP_DELAY);
    }
    /* torch.nn.LSTM(3, 4, 2) has 4*4*(3+4) + 2*16 + 4*4*(4+4) + 2*16 = 304 parameters */
    int n = 0;
    for (int i = 0; i < otc_graph_size(g); i++)
        if (otc_graph_node(g, i)->op == OTC_OP_PARAMETER)
            n += (int)otc_graph_node(g, i)->value->size;
    CHECK(n == 304);
    otc_graph_free(g);
}

TEST(layers_recurrent_errors) {
    otc_graph *g = otc_graph_new();
    otc_rng rng;
    otc_rng_seed(&rng, 3);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 3));
    otc_id w = otc_param(g, "w", otc_shape_2d(3, 3), NULL);
    int size = otc_graph_size(g);
    CHECK(otc_gru(g, w, 4, 1, &rng, "gru") < 0);
    CHECK(strstr(otc_last_error(), "otc_gru gru: input 'w' has shape"));
    CHECK(otc_rnn(g, x, 0, 1, &rng, "r") < 0);
    CHECK(strstr(otc_last_error(), "hidden 0"));
    CHECK(otc_lstm(g, x, 4, 1, NULL, "l") < 0);
    CHECK(otc_lstm(g, x, 4, 1, &rng, NULL) < 0);
    CHECK(otc_graph_size(g) == size);
    REQUIRE(otc_lstm(g, x, 4, 1, &rng, "l") >= 0);
    size = otc_graph_size(g);
    CHECK(otc_lstm(g, x, 4, 1, &rng, "l") < 0); /* the names are taken */
    CHECK(strstr(otc_last_error(), "layer 0"));
    CHECK(otc_graph_size(g) == size);
    float v[4];
    CHECK(otc_recurrent_load_torch(g, "l", "weight_ih_l0", v, 4) == OTC_ERR_SHAPE);
    CHECK(strstr(otc_last_error(), "'l.weight_ih_l0' has 48 values, given 4"));
    CHECK(otc_recurrent_load_torch(g, "l", "weight_ih_l7", v, 4) == OTC_ERR_ARG);
    otc_graph_free(g);
}

/* Against torch.nn: the file OTC_TORCH_REF (written by tests/recurrent_torch_ref.py) holds, per
 * case, "cell layers in hidden T B", then each layer's four parameters in PyTorch's layout,
 * the input [T][B][in] and torch's output [T][B][hidden]. Without the variable there is
 * nothing to compare (the ctest layers_recurrent_torch sets it, or skips without torch). */
TEST(layers_recurrent_torch_file) {
    const char *path = getenv("OTC_TORCH_REF");
    if (!path) {
        printf("OTC_TORCH_REF not set: run through the ctest layers_recurrent_torch\n");
        return;
    }
    FILE *f = fopen(path, "r");
    REQUIRE(f);
    static float buf[MAXV], xs[MAXV], want[MAXV], got[MAXV];
    char name[16];
    int cases = 0, L, in, H, T, B;
    while (fscanf(f, "%15s %d %d %d %d %d", name, &L, &in, &H, &T, &B) == 6) {
        otc_cell cell = !strcmp(name, "lstm")  ? OTC_CELL_LSTM
                        : !strcmp(name, "gru") ? OTC_CELL_GRU
                                               : OTC_CELL_RNN;
        int G = otc_cell_gates(cell);
        otc_graph *g = otc_graph_new();
        otc_rng rng;
        otc_rng_seed(&rng, 1);
        otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, in));
        otc_id h = otc_recurrent(g, cell, x, H, L, &rng, "rnn");
        REQUIRE(h >= 0);
        for (int l = 0; l < L; l++) {
            size_t n[4] = {(size_t)G * H * (l ? H : in), (size_t)G * H * H, (size_t)G * H,
                           (size_t)G * H};
            for (int k = 0; k < 4; k++) {
                for (size_t i = 0; i < n[k]; i++) REQUIRE(fscanf(f, "%f", &buf[i]) == 1);
                load(g, keys[k], l, buf, n[k]);
            }
        }
        for (int i = 0; i < T * B * in; i++) REQUIRE(fscanf(f, "%f", &xs[i]) == 1);
        for (int i = 0; i < T * B * H; i++) REQUIRE(fscanf(f, "%f", &want[i]) == 1);
        run_steps(g, x, h, T, B, xs, in, got, H);
        double worst = 0;
        for (int i = 0; i < T * B * H; i++) worst = fmax(worst, fabs(got[i] - want[i]));
        printf("%s layers %d: largest difference to torch.nn %.3g\n", name, L, worst);
        CHECK(worst < 1e-5);
        otc_graph_free(g);
        cases++;
    }
    fclose(f);
    CHECK(cases == 6);
}
