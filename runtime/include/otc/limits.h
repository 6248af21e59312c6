/* The limits a model, graph or file must respect, in one place: far above any model otc
 * evolves or trains, low enough that a hostile file cannot make the loader (or a later
 * executor) work or allocate without bound. Every reader and builder checks against these
 * and names the limit in its message. */
#ifndef OTC_LIMITS_H
#define OTC_LIMITS_H

#include <stdint.h>

#include "error.h"
#include "graph.h"

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
/* Integration steps of one CTRNN advance in an imported neat-python network (each step is a
 * copy of the network in the graph). */
#define OTC_MAX_CTRNN_STEPS 1000
/* Steps of one recorded sequence (backpropagation through time, otc_exec_seq_begin). */
#define OTC_MAX_SEQ_STEPS (1 << 20)
/* Metadata keys in a graph or model file. */
#define OTC_MAX_META_KEYS (1 << 20)

/* Bytes of every node's value (parameters included) at the given batch, saturating at
 * UINT64_MAX: what an interpreter allocates for a forward pass (training about doubles it). */
uint64_t otc_graph_value_bytes(const otc_graph *g, int64_t batch);
/* The memory the process may use: the OTC_MEMORY_LIMIT environment variable (bytes, or with a
 * K, M or G suffix) when set, else the machine's physical memory. */
uint64_t otc_memory_limit(void);
/* OTC_ERR_NOMEM, with a message saying what needs how much and what the limit is, when
 * `bytes` exceed otc_memory_limit(); checked before allocating, so a small file cannot make
 * a command allocate gigabytes and fail later. */
otc_status otc_memory_check(uint64_t bytes, const char *what);

#endif
