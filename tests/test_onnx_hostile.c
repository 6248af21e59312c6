/* ONNX import of hostile and unsupported files: each case is a small valid model (built here
 * with protobuf-c) with one thing broken, and must give the right status and a message
 * naming what is wrong (the node, its op_type and opset, the tensor or the limit); never a
 * crash or a graph. External data is confined to the model's folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "onnx.pb-c.h"
#include "otc/file.h"
#include "otc/onnx.h"

/* A model y = MatMul(x [N,4], W [4,3]) in opset 13, which each case then breaks. */
typedef struct {
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__GraphProto g;
    Onnx__NodeProto node[2], *nodes[2];
    char *in0[2], *out0[1], *in1[2], *out1[1];
    Onnx__TensorProto w, *inits[1];
    int64_t wdims[2];
    float wdata[12];
    Onnx__ValueInfoProto x, y, *ins[1], *outs[1];
    Onnx__TypeProto xt;
    Onnx__TypeProto__Tensor xtt;
    Onnx__TensorShapeProto xs;
    Onnx__TensorShapeProto__Dimension xd[2], *xdp[2];
    Onnx__AttributeProto attr, *attrs[1];
    Onnx__StringStringEntryProto ext[3], *exts[3];
} model;

static void base(model *b) {
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->m);
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    onnx__operator_set_id_proto__init(&b->opset);
    b->opset.domain = "";
    b->opset.has_version = 1;
    b->opset.version = 13;
    b->opsets[0] = &b->opset;
    b->m.n_opset_import = 1;
    b->m.opset_import = b->opsets;
    onnx__graph_proto__init(&b->g);
    b->m.graph = &b->g;
    for (int i = 0; i < 2; i++) {
        onnx__node_proto__init(&b->node[i]);
        b->nodes[i] = &b->node[i];
    }
    b->in0[0] = "x";
    b->in0[1] = "W";
    b->out0[0] = "y";
    b->node[0].name = "mm";
    b->node[0].op_type = "MatMul";
    b->node[0].n_input = 2;
    b->node[0].input = b->in0;
    b->node[0].n_output = 1;
    b->node[0].output = b->out0;
    b->g.n_node = 1;
    b->g.node = b->nodes;
    onnx__tensor_proto__init(&b->w);
    b->w.name = "W";
    b->wdims[0] = 4;
    b->wdims[1] = 3;
    b->w.n_dims = 2;
    b->w.dims = b->wdims;
    b->w.has_data_type = 1;
    b->w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    for (int i = 0; i < 12; i++) b->wdata[i] = (float)i;
    b->w.n_float_data = 12;
    b->w.float_data = b->wdata;
    b->inits[0] = &b->w;
    b->g.n_initializer = 1;
    b->g.initializer = b->inits;
    onnx__value_info_proto__init(&b->x);
    onnx__value_info_proto__init(&b->y);
    b->x.name = "x";
    b->y.name = "y";
    onnx__type_proto__init(&b->xt);
    onnx__type_proto__tensor__init(&b->xtt);
    onnx__tensor_shape_proto__init(&b->xs);
    for (int i = 0; i < 2; i++) {
        onnx__tensor_shape_proto__dimension__init(&b->xd[i]);
        b->xdp[i] = &b->xd[i];
    }
    b->xd[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    b->xd[0].dim_param = "N";
    b->xd[1].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    b->xd[1].dim_value = 4;
    b->xs.n_dim = 2;
    b->xs.dim = b->xdp;
    b->xtt.has_elem_type = 1;
    b->xtt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    b->xtt.shape = &b->xs;
    b->xt.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    b->xt.tensor_type = &b->xtt;
    b->x.type = &b->xt;
    b->ins[0] = &b->x;
    b->outs[0] = &b->y;
    b->g.n_input = 1;
    b->g.input = b->ins;
    b->g.n_output = 1;
    b->g.output = b->outs;
    onnx__attribute_proto__init(&b->attr);
    b->attrs[0] = &b->attr;
}

/* Packs b and imports it; the status, with the message in msg. */
static otc_status import(model *b, const char *dir, char *msg, size_t len, otc_graph **g) {
    size_t n = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(n + 1);
    if (!buf) return OTC_ERR_NOMEM;
    onnx__model_proto__pack(&b->m, buf);
    otc_graph *out = NULL;
    otc_status st = otc_onnx_import(buf, n, "m.onnx", dir, &out);
    snprintf(msg, len, "%s", st ? otc_last_error() : "");
    free(buf);
    if (st && out) st = OTC_ERR_STATE; /* a graph with an error: wrong */
    if (g)
        *g = out;
    else
        otc_graph_free(out);
    return st;
}

/* The case imports with status `want` and a message containing each of the texts. */
static void expect(model *b, otc_status want, const char *a, const char *c) {
    char msg[1024];
    otc_status st = import(b, NULL, msg, sizeof msg, NULL);
    CHECK_MSG(st == want, "status %d, wanted %d: %s", (int)st, (int)want, msg);
    CHECK_MSG(!a || strstr(msg, a), "'%s' lacks '%s'", msg, a);
    CHECK_MSG(!c || strstr(msg, c), "'%s' lacks '%s'", msg, c);
}

TEST(onnx_hostile_base_imports) {
    model b;
    base(&b);
    char msg[1024];
    otc_graph *g = NULL;
    CHECK(import(&b, NULL, msg, sizeof msg, &g) == OTC_OK);
    REQUIRE(g);
    CHECK(otc_graph_find(g, "W") >= 0 && otc_graph_find(g, "y") == otc_graph_output(g, 0));
    otc_graph_free(g);
}

TEST(onnx_hostile_not_protobuf) {
    const char junk[] = "\xff\xff\xff\xff garbage";
    otc_graph *g = NULL;
    CHECK(otc_onnx_import(junk, sizeof junk, "j.onnx", NULL, &g) == OTC_ERR_FORMAT && !g);
    CHECK(strstr(otc_last_error(), "j.onnx: not an ONNX model"));
    /* the size limit is checked before a byte is read */
    CHECK(otc_onnx_import(junk, OTC_MAX_ONNX_BYTES + 1, "big.onnx", NULL, &g) == OTC_ERR_FORMAT &&
          !g);
    CHECK(strstr(otc_last_error(), "more than"));
}

TEST(onnx_hostile_versions) {
    model b;
    base(&b);
    b.opset.version = 18;
    expect(&b, OTC_ERR_UNSUPPORTED, "opset 18", "7 to 17");
    base(&b);
    b.m.ir_version = 9;
    expect(&b, OTC_ERR_UNSUPPORTED, "IR version 9", NULL);
}

TEST(onnx_hostile_tensor_sizes) {
    model b;
    base(&b);
    b.w.n_float_data = 11;
    expect(&b, OTC_ERR_FORMAT, "tensor 'W'", "11 values, its dims need 12");
    base(&b);
    uint8_t raw[40] = {0};
    b.w.n_float_data = 0;
    b.w.has_raw_data = 1;
    b.w.raw_data.len = sizeof raw;
    b.w.raw_data.data = raw;
    expect(&b, OTC_ERR_FORMAT, "40 bytes of raw data, its dims need 48", NULL);
    base(&b);
    b.wdims[0] = -4;
    expect(&b, OTC_ERR_FORMAT, "tensor 'W': dimension 0 is -4", NULL);
    base(&b);
    b.wdims[0] = 1 << 20;
    b.wdims[1] = 1 << 20; /* 2^40 elements: refused before any allocation */
    expect(&b, OTC_ERR_FORMAT, "more than", "OTC_MAX_ELEMS");
}

TEST(onnx_hostile_graph_structure) {
    model b;
    base(&b);
    /* a cycle: mm reads z, which a Relu computes from y */
    char *in1[1] = {"y"}, *out1[1] = {"z"};
    b.in0[0] = "z";
    b.node[1].op_type = "Relu";
    b.node[1].name = "r";
    b.node[1].n_input = 1;
    b.node[1].input = in1;
    b.node[1].n_output = 1;
    b.node[1].output = out1;
    b.g.n_node = 2;
    expect(&b, OTC_ERR_CYCLE, "cycle", NULL);
    base(&b);
    b.in0[0] = "nowhere";
    expect(&b, OTC_ERR_FORMAT, "node 'mm' (#0, MatMul, opset 13)", "'nowhere' is not defined");
    base(&b);
    b.out0[0] = "W"; /* an output that redefines the initializer */
    expect(&b, OTC_ERR_FORMAT, "'W' is defined twice", NULL);
    base(&b);
    b.y.name = "q";
    expect(&b, OTC_ERR_FORMAT, "graph output 'q' is not computed", NULL);
}

TEST(onnx_hostile_nodes) {
    model b;
    base(&b);
    b.node[0].op_type = "Frobnicate";
    expect(&b, OTC_ERR_UNSUPPORTED, "node 'mm' (#0, Frobnicate, opset 13): op not supported",
           "Conv");
    base(&b);
    Onnx__GraphProto sub;
    onnx__graph_proto__init(&sub);
    b.attr.name = "then_branch";
    b.attr.has_type = 1;
    b.attr.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    b.attr.g = &sub;
    b.node[0].n_attribute = 1;
    b.node[0].attribute = b.attrs;
    expect(&b, OTC_ERR_UNSUPPORTED, "nested graphs", NULL);
    base(&b);
    b.node[0].domain = "com.example";
    expect(&b, OTC_ERR_UNSUPPORTED, "domain 'com.example'", NULL);
    /* a huge attribute array is refused by its count */
    base(&b);
    int64_t many[1000] = {0};
    b.node[0].op_type = "Transpose";
    b.node[0].n_input = 1;
    b.attr.name = "perm";
    b.attr.has_type = 1;
    b.attr.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    b.attr.n_ints = 1000;
    b.attr.ints = many;
    b.node[0].n_attribute = 1;
    b.node[0].attribute = b.attrs;
    expect(&b, OTC_ERR_FORMAT, "attribute perm has 1000 values", NULL);
    /* a transpose that moves data: otc has no op for it */
    b.attr.n_ints = 2;
    many[0] = 1;
    expect(&b, OTC_ERR_UNSUPPORTED, "Transpose, opset 13", "moves data");
    /* an input whose inner dimension is symbolic */
    base(&b);
    b.xd[1].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    b.xd[1].dim_param = "K";
    expect(&b, OTC_ERR_UNSUPPORTED, "input 'x': dimension 1 is not a fixed size", NULL);
    /* an input of 2^48 elements a sample: refused by count, nothing allocated */
    base(&b);
    Onnx__TensorShapeProto__Dimension big[4], *bigp[4];
    for (int i = 0; i < 4; i++) {
        big[i] = b.xd[1];
        big[i].dim_value = 1 << 16;
        bigp[i] = &big[i];
    }
    bigp[0] = &b.xd[0];
    b.xs.n_dim = 4;
    b.xs.dim = bigp;
    expect(&b, OTC_ERR_UNSUPPORTED, "input 'x' has more than", "elements a sample");
}

/* External data: a plain file name in dir, its offset and length within the file. */
TEST(onnx_hostile_external_data) {
    char dir[] = "/tmp/otc_onnx_extXXXXXX";
    REQUIRE(mkdtemp(dir));
    char path[600];
    snprintf(path, sizeof path, "%s/w.bin", dir);
    float w[14];
    for (int i = 0; i < 14; i++) w[i] = (float)(i - 2);
    REQUIRE(otc_write_file_atomic(path, w, sizeof w) == OTC_OK);
    model b;
    char msg[1024];
    const char *locs[] = {"../w.bin", "/etc/passwd", "sub/w.bin", "..", ""};
    for (int i = 0; i < 6; i++) {
        base(&b);
        b.w.n_float_data = 0;
        b.w.has_data_location = 1;
        b.w.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        for (int k = 0; k < 3; k++) {
            onnx__string_string_entry_proto__init(&b.ext[k]);
            b.exts[k] = &b.ext[k];
        }
        b.ext[0].key = "location";
        b.ext[0].value = i < 5 ? (char *)locs[i] : "w.bin";
        b.ext[1].key = "offset";
        b.ext[1].value = i == 5 ? "16" : "8";
        b.ext[2].key = "length";
        b.ext[2].value = "48";
        b.w.n_external_data = 3;
        b.w.external_data = b.exts;
        otc_graph *g = NULL;
        otc_status st = import(&b, dir, msg, sizeof msg, &g);
        if (i < 5) {
            CHECK_MSG(st == OTC_ERR_FORMAT && strstr(msg, "not a plain file name"), "%s: %s",
                      locs[i], msg);
            continue;
        }
        /* offset 16 + 48 bytes is past the 56-byte file */
        CHECK_MSG(st == OTC_ERR_FORMAT && strstr(msg, "past the end"), "%s", msg);
        b.ext[1].value = "8"; /* floats 2 .. 13 of the file: 0 .. 11 */
        st = import(&b, dir, msg, sizeof msg, &g);
        CHECK_MSG(st == OTC_OK, "%s", msg);
        if (g) {
            const otc_tensor *t = otc_graph_param(g, otc_graph_find(g, "W"));
            CHECK(t && t->size == 12 && t->data[0] == 0 && t->data[11] == 11);
            otc_graph_free(g);
        }
        /* without a folder, external data is refused */
        CHECK(import(&b, NULL, msg, sizeof msg, NULL) == OTC_ERR_UNSUPPORTED);
        /* a symbolic link in the folder is not followed */
        char link[620];
        snprintf(link, sizeof link, "%s/l.bin", dir);
        REQUIRE(symlink(path, link) == 0);
        b.ext[0].value = "l.bin";
        CHECK(import(&b, dir, msg, sizeof msg, NULL) == OTC_ERR_IO);
        CHECK_MSG(strstr(msg, "'l.bin' cannot be read"), "%s", msg);
        unlink(link);
    }
    unlink(path);
    rmdir(dir);
}

/* LayerNormalization: Scale must hold the features' count of floats; with it, x [B,4]
 * normalised in graph ops. */
TEST(onnx_hostile_layernorm) {
    model b;
    otc_graph *g = NULL;
    char msg[1024];
    base(&b);
    b.opset.version = 17;
    b.node[0].op_type = "LayerNormalization";
    expect(&b, OTC_ERR_UNSUPPORTED,
           "node 'mm' (#0, LayerNormalization, opset 17): Scale and B must be constant floats of "
           "the 4 features",
           "'W' is not");
    base(&b);
    b.opset.version = 17;
    b.node[0].op_type = "LayerNormalization";
    b.w.n_dims = 1;
    b.w.n_float_data = 4;
    CHECK_MSG(import(&b, NULL, msg, sizeof msg, &g) == OTC_OK, "%s", msg);
    if (g) CHECK(otc_graph_node(g, otc_graph_output(g, 0))->shape.dim[1] == 4);
    otc_graph_free(g);
}

/* Ops read only inside otc's own activations (onnx_match.c), and Pow by a constant. */
TEST(onnx_hostile_export_patterns) {
    model b;
    otc_graph *g = NULL;
    char msg[1024];
    base(&b);
    b.node[0].op_type = "Greater";
    expect(&b, OTC_ERR_UNSUPPORTED, "Greater, opset 13): read only as part of an activation",
           "no Greater op of its own");
    base(&b);
    b.node[0].op_type = "Pow";
    expect(&b, OTC_ERR_UNSUPPORTED,
           "Pow, opset 13): the exponent must be the constant 1, 2, 3, 0.5 or -1", NULL);
    /* with a scalar exponent 2, x squared (0.5 its square root, -1 its reciprocal); the unary
     * ops alone, anywhere, are otc's ops of the same math */
    const char *ops[] = {"Pow", "Pow", "Pow", "Sin", "Cos", "Sqrt", "Reciprocal"};
    const float k[] = {2, 0.5f, -1, 0, 0, 0, 0};
    const otc_op want[] = {OTC_OP_SQUARE, OTC_OP_SQRT, OTC_OP_RECIPROCAL, OTC_OP_SIN,
                           OTC_OP_COS,    OTC_OP_SQRT, OTC_OP_RECIPROCAL};
    for (int i = 0; i < 7; i++) {
        base(&b);
        b.node[0].op_type = (char *)ops[i];
        b.node[0].n_input = i < 3 ? 2 : 1;
        b.w.n_dims = 0;
        b.w.n_float_data = 1;
        b.wdata[0] = k[i];
        otc_status st = import(&b, NULL, msg, sizeof msg, &g);
        CHECK_MSG(st == OTC_OK, "%s: %s", ops[i], msg);
        if (g) {
            const otc_node *y = otc_graph_node(g, otc_graph_output(g, 0));
            CHECK_MSG(y->op == want[i], "%s read as %s", ops[i], otc_op_get(y->op)->name);
        }
        otc_graph_free(g);
        g = NULL;
    }
}

/* Found by fuzz_onnx (tests/onnx/fuzz_*.onnx, also seeds): otc's export of a neuron loop whose
 * second Concat has an empty input name (the neuron matcher read the value table at index -1),
 * and a PyTorch model whose second Conv has no output (the bias fold read through a NULL
 * value); each is refused naming the node. */
TEST(onnx_hostile_fuzz_found) {
    static const struct {
        const char *file, *want;
    } cases[] = {
        {"fuzz_concat_absent_input", "'Concat:15' (#8, Concat, opset 13): input 1 is missing"},
        {"fuzz_conv_no_output", "'/c2/Conv' (#4, Conv, opset 13): the node has no first output"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512], *data = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "%s/tests/onnx/%s.onnx", OTC_SOURCE_DIR, cases[i].file);
        REQUIRE(otc_read_file(path, OTC_MAX_ONNX_BYTES, &data, &len) == OTC_OK);
        otc_graph *g = NULL;
        CHECK(otc_onnx_import(data, len, path, NULL, &g) == OTC_ERR_FORMAT && !g);
        CHECK_MSG(strstr(otc_last_error(), cases[i].want), "%s: %s", cases[i].file,
                  otc_last_error());
        otc_graph_free(g);
        free(data);
    }
}
