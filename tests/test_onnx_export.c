/* otc_onnx_export's contract from C: bad arguments and graphs without outputs refused, a loss
 * anywhere on the outputs' path refused naming it, and the bytes a protobuf ModelProto whose
 * first field is the IR version (read by hand from the wire format, not through protobuf-c). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "otc/onnx.h"
#include "otc/otc.h"

TEST(onnx_export_refuses_bad_arguments) {
    void *data = (void *)1;
    size_t len = 7;
    CHECK(otc_onnx_export(NULL, &data, &len) == OTC_ERR_ARG);
    otc_graph *g = otc_graph_new();
    CHECK(otc_onnx_export(g, NULL, &len) == OTC_ERR_ARG);
    CHECK(otc_onnx_export(g, &data, NULL) == OTC_ERR_ARG);
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    REQUIRE(otc_activation(g, OTC_OP_TANH, x, 0) >= 0);
    CHECK(otc_onnx_export(g, &data, &len) == OTC_ERR_ARG); /* no outputs */
    CHECK(data == NULL && len == 0);
    CHECK(strstr(otc_last_error(), "no outputs") != NULL);
    otc_graph_free(g);
}

TEST(onnx_export_refuses_a_loss_on_the_path) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 2));
    otc_id t = otc_input(g, "t", otc_shape_2d(OTC_BATCH, 2));
    otc_id l = otc_bce(g, otc_activation(g, OTC_OP_SIGMOID, x, 0), t);
    REQUIRE(l >= 0 && otc_graph_set_name(g, l, "bce_loss") == OTC_OK);
    otc_id s = otc_scale(g, otc_reshape(g, l, otc_shape_1d(1)), 2.0f);
    REQUIRE(s >= 0 && otc_graph_mark_output(g, s) == OTC_OK);
    void *data = NULL;
    size_t len = 0;
    CHECK(otc_onnx_export(g, &data, &len) == OTC_ERR_UNSUPPORTED);
    CHECK(data == NULL);
    CHECK_MSG(strstr(otc_last_error(), "node 'bce_loss' (bce)") != NULL, "%s", otc_last_error());
    otc_graph_free(g);
}

/* The varint at *p (protobuf's base-128, least significant group first). */
static unsigned long long varint(const unsigned char **p, const unsigned char *end) {
    unsigned long long v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char c = *(*p)++;
        v |= (unsigned long long)(c & 0x7f) << shift;
        if (!(c & 0x80)) break;
    }
    return v;
}

TEST(onnx_export_writes_a_model_proto) {
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 1));
    otc_id d = otc_delay(g, "h", otc_shape_2d(OTC_BATCH, 1));
    otc_id y = otc_add(g, x, d);
    REQUIRE(y >= 0 && otc_graph_set_input(g, d, 0, y) == OTC_OK);
    REQUIRE(otc_graph_mark_output(g, y) == OTC_OK);
    void *data = NULL;
    size_t len = 0;
    REQUIRE(otc_onnx_export(g, &data, &len) == OTC_OK);
    const unsigned char *p = data, *end = p + len;
    /* field 1 (ir_version), wire type 0 (varint): tag 0x08, then the version */
    CHECK(len > 2 && varint(&p, end) == 0x08);
    unsigned long long ir = varint(&p, end);
    CHECK_MSG(ir >= 7 && ir <= 8, "IR version %llu", ir);
    /* the state pair's names are in the file */
    bool in = false, out = false;
    for (size_t i = 0; i + 11 <= len; i++) {
        in |= memcmp((const char *)data + i, "state_in:h", 10) == 0;
        out |= memcmp((const char *)data + i, "state_out:h", 11) == 0;
    }
    CHECK(in && out);
    free(data);
    otc_graph_free(g);
}
