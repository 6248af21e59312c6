/* The .otm model file: magic, version, JSON header, little-endian f32 parameter data. */
#ifndef OTC_MODEL_H
#define OTC_MODEL_H

#include <stddef.h>

#include "graph.h"

/* Atomic: written to a temporary name beside `path`, then renamed into place. */
otc_status otc_model_save(const otc_graph *g, const char *path);
/* Every count, id, shape and length is checked before use; errors name the file and field. */
otc_status otc_model_load(const char *path, otc_graph **out);
otc_status otc_model_load_buffer(const void *data, size_t len, const char *name, otc_graph **out);

#endif
