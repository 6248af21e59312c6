/* A genome lowered to a flat evaluation program: what evolution runs instead of building a
 * named phenotype graph and an executor for every genome. */
#ifndef OTC_NEAT_FLAT_H
#define OTC_NEAT_FLAT_H

#include <stdbool.h>

#include "executor.h"
#include "neat_genome.h"

/* The program keeps node-major arrays (each neuron's sources and weights in evaluation order,
 * its bias, response and activation) and the value arrays, and reuses all of them for the next
 * genome: once it has held the largest genome, lowering and running allocate nothing. It
 * computes what the phenotype graph (otc_neat_phenotype_build) run by the interpreter computes,
 * bit for bit: the same neurons (those that can reach an output), each neuron's weighted sum in
 * innovation order through the Neuron's arithmetic, the activation through the interpreter's
 * own activation kernels. Recurrent genomes (config feed_forward = false) read every non-input
 * source as it was on the previous step (zeros after a reset), as the graph's Delay nodes. */
typedef struct otc_neat_flat otc_neat_flat;

otc_neat_flat *otc_neat_flat_new(void);
void otc_neat_flat_free(otc_neat_flat *f);
/* Lower g (laid out as c says) into f, replacing the program f held; recurrent state starts
 * at zero. OTC_ERR_CYCLE for a feed-forward genome with a cycle among the neurons it needs,
 * OTC_ERR_FORMAT for genes that name missing nodes or an input id outside num_inputs. */
otc_status otc_neat_flat_build(otc_neat_flat *f, const otc_neat_genome *g,
                               const otc_neat_config *c);
/* One step on `batch` rows: x [batch, num_inputs] -> y [batch, num_outputs]. A recurrent
 * program carries its state per row to the next call (a new batch size starts from zero). */
otc_status otc_neat_flat_forward(otc_neat_flat *f, const float *x, int batch, float *y);
/* Recurrent state back to zero (the start of an episode). */
void otc_neat_flat_reset(otc_neat_flat *f);
/* A recurrent program's state for the neuron with gene id `id`: its value at the last step
 * (what the next step reads; zeros after a reset), one float per row of the last batch, into
 * out. *rows gets that row count (0 before the first step: the state is zero). OTC_ERR_ARG
 * when the program is not recurrent or does not evaluate that node. For handing a genome's
 * state over to other code mid-episode (the phenotype graph's Delay of that node). */
otc_status otc_neat_flat_state(const otc_neat_flat *f, int id, float *out, int cap, int *rows);
/* f's state handed to ex, an executor of the phenotype graph of the genome f was built from
 * (otc_neat_phenotype_build with the same config): each Delay's next value becomes its
 * neuron's value at f's last step (set_state), so ex's next forward carries on where f
 * stopped. Nothing to do before f's first step (ex starts from zeros too). */
otc_status otc_neat_flat_hand_over(const otc_neat_flat *f, const otc_neat_phenotype *ph,
                                   otc_executor *ex);
/* Rows of the program's last batch: how many floats otc_neat_flat_state writes (0 before the
 * first step). */
int otc_neat_flat_rows(const otc_neat_flat *f);
/* Neurons the program evaluates (the bias constant not counted), for tests and tools. */
int otc_neat_flat_neurons(const otc_neat_flat *f);

#endif
