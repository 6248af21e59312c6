/* ONNX model files in and out: an ONNX graph as an otc graph (initializers become named,
 * trainable parameters), and an otc graph as an ONNX model. Parsed and written through
 * protobuf-c from ONNX's own schema (cmake/onnx_proto.cmake). */
#ifndef OTC_ONNX_H
#define OTC_ONNX_H

#include <stddef.h>

#include "graph.h"

/* Import: `data` is the whole file (len bytes); `label` (the file name) starts every error
 * message, which names the node, its op_type and the opset; `dir` is the folder external-data
 * tensors are read from (NULL: external data is refused). OTC_ERR_FORMAT for malformed input,
 * OTC_ERR_UNSUPPORTED for what otc cannot express. */
otc_status otc_onnx_import(const void *data, size_t len, const char *label, const char *dir,
                           otc_graph **out);

/* Export: the ONNX model of `g` (opset 13 or newer) as protobuf bytes in a buffer the caller
 * frees; what cannot be expressed is refused naming the node (OTC_ERR_UNSUPPORTED). */
otc_status otc_onnx_export(const otc_graph *g, void **data, size_t *len);

#endif
