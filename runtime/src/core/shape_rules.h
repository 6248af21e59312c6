/* Private: the shape rule of each op, referenced by the op table in ops.c. */
#ifndef OTC_SHAPE_RULES_H
#define OTC_SHAPE_RULES_H

#include "op_table.h"

otc_status otc_shape_source(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_same(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_binary(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_matmul(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_row_broadcast(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_reduce(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_reshape(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_flatten(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_concat(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_slice(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_select(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_softmax(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_loss(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_softmax_ce(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_neuron(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_delay(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
/* shape_rules_window.c */
otc_status otc_shape_conv2d(const otc_graph *g, const otc_node_spec *s, otc_shape *out);
otc_status otc_shape_pool2d(const otc_graph *g, const otc_node_spec *s, otc_shape *out);

#endif
