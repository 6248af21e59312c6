/* The limits a model, graph or file must respect, in one place: far above any model otc
 * evolves or trains, low enough that a hostile file cannot make the loader (or a later
 * executor) work or allocate without bound. Every reader and builder checks against these
 * and names the limit in its message. */
#ifndef OTC_LIMITS_H
#define OTC_LIMITS_H

#include <stdint.h>

/* Nodes in a model file (.otm); checked before the file's node list is built. */
#define OTC_MAX_NODES (1 << 20)
/* Nodes in a graph in memory (a loaded model plus, say, the loss nodes training adds). */
#define OTC_MAX_GRAPH_NODES (1 << 24)
/* Inputs of one node. */
#define OTC_MAX_INPUTS (1 << 16)
/* One dimension of a shape. */
#define OTC_MAX_DIM (1 << 24)
/* Elements of one shape, per sample (the batch dimension excluded): 1 GiB of floats. */
#define OTC_MAX_ELEMS ((uint64_t)1 << 28)
/* Bytes of a node name, terminator excluded. */
#define OTC_MAX_NAME_LEN 4096
/* Metadata keys in a graph or model file. */
#define OTC_MAX_META_KEYS (1 << 20)

#endif
