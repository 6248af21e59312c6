/* HyperNEAT: a CPPN genome paints the weights of a layered substrate of 2-D node grids
 * (the config's [Substrate]); the painted substrate runs as dense layers. */
#ifndef OTC_HYPERNEAT_H
#define OTC_HYPERNEAT_H

#include <stdbool.h>

#include "error.h"
#include "graph.h"
#include "neat_config.h"
#include "neat_flat.h"
#include "neat_genome.h"

/* The config parser's grid syntax: "NXxNY" (each side 1 to OTC_SUBSTRATE_MAX_SIDE); a
 * hidden_grids value is "none" or a list of grids (otc_list_split: spaces or commas). */
#define OTC_SUBSTRATE_MAX_SIDE 1024
#define OTC_SUBSTRATE_GRID_EXPECTED                                                                \
    "bad value '%s' (expected a grid NXxNY such as 11x11, sides 1 to 1024)"
#define OTC_SUBSTRATE_GRIDS_EXPECTED                                                               \
    "bad value '%s' (expected none or up to 4 grids NXxNY separated by spaces)"
bool otc_substrate_parse_grid(const char *text, otc_neat_grid *out);
/* A config with [Substrate]: its grids and the CPPN's inputs/outputs agree (OTC_ERR_CONFIG
 * naming file, section and key otherwise). */
otc_status otc_substrate_check(const otc_neat_config *c, const char *file);

/* The CPPN's layout: inputs x1 y1 x2 y2 [distance] [z1 z2]; outputs weight [bias] [leo]. */
int otc_substrate_cppn_inputs(const otc_neat_substrate *s);
int otc_substrate_cppn_outputs(const otc_neat_substrate *s);
/* One CPPN query row q (cppn_inputs floats) for the connection (x1, y1) -> (x2, y2). */
void otc_substrate_cppn_row(const otc_neat_substrate *s, float *q, float x1, float y1, float x2,
                            float y2);

/* The LEO seed ([Substrate] leo_seed): the hidden nodes it adds to every initial CPPN (their
 * ids follow the config's hidden nodes), and the seeding of genome g, run at the end of
 * otc_neat_genome_init. locality_x (Verbancsics and Stanley 2011): a Gaussian node of
 * 2 x1 - 2 x2 feeds the LEO output, which becomes identity with bias -0.3 and loses its other
 * links (disabled), so a link is expressed where |x1 - x2| < 0.55. */
int otc_substrate_seed_nodes(const otc_neat_config *c);
otc_status otc_substrate_seed_cppn(otc_neat_genome *g, const otc_neat_config *c,
                                   otc_neat_innovations *t, otc_rng *rng);

/* ES-HyperNEAT (Risi and Stanley 2012, evolvable_substrate = true): hidden nodes where the
 * CPPN's weight pattern has information. From each input node (a, b), [-1, 1]^2 is divided
 * into quarters breadth first: a square at depth d (the whole plane is depth 0) is divided
 * when d < initial_depth, or when d < maximum_depth and the weights CPPN(a, b, x, y) at the
 * centres of its parent's four quarters have a variance above division_threshold. Depth
 * first from the top, a square whose leaves' weights vary by variance_threshold or more is
 * looked into; any other square is a candidate, expressed as a connection (a, b) -> (x, y) of
 * weight w max_weight (w the CPPN's weight output clamped to [-1, 1]; with LEO, only where
 * the LEO output is > 0) when it lies in a band: max(min(dl, dr), min(dt, db)) >
 * band_threshold, dl..db the differences between w and the weights one square's side to its
 * left, right, top and bottom. Every expressed point becomes a hidden node. The search runs
 * again from the hidden nodes found in the previous round, iteration_level times, and then
 * into each output node, CPPN(x, y, a, b), keeping links from hidden nodes found. A link into a
 * hidden node found no later than its source would be recurrent and is dropped; hidden nodes
 * on no path from an input to an output are removed with their links. Weight thresholds do
 * not apply. With bias_output, hidden and output biases are the bias output at (0, 0, x, y),
 * clamped and scaled alike. */
typedef struct {
    int n_inputs, n_outputs, n_hidden; /* node ids: inputs, then outputs, then hidden */
    float *x, *y;                      /* per node id */
    /* The network as a feed-forward NEAT genome (no bias node; hidden nodes in the order
     * found; every node of the substrate's activation, links in the order found), run and
     * turned into a graph under the NEAT config with the grids' inputs and outputs. */
    otc_neat_genome *net;
} otc_es_network;

/* in_xy and out_xy: (x, y) per input and output node. */
otc_status otc_es_search(const otc_neat_substrate *sub, otc_neat_flat *cppn, const float *in_xy,
                         int n_in, const float *out_xy, int n_out, otc_es_network *out);
void otc_es_network_clear(otc_es_network *n);
/* One search's expressed points from (a, b) (outgoing) or into it: (x, y, weight) triples in
 * *xyw (free() it), *n of them, in the order found. For tests and pictures. */
otc_status otc_es_points(const otc_neat_substrate *sub, otc_neat_flat *cppn, float a, float b,
                         bool outgoing, float **xyw, int *n);
/* n drawn at its nodes' coordinates ([-1, 1]^2, y down) as an SVG file, written whole. */
otc_status otc_es_save_svg(const otc_es_network *n, const char *title, const char *path);
/* The most links a search with these inputs and outputs can make (for the memory limit). */
double otc_es_max_connections(const otc_neat_substrate *sub, int n_in, int n_out);

/* A painted substrate: layer 0 the input grid, then the hidden grids, then the output grid,
 * every grid's sides multiplied by `scale` (the same CPPN queried at a finer resolution). Node
 * (col, row) of an NX x NY grid is index row * NX + col at x = (2 col + 1) / NX - 1,
 * y = (2 row + 1) / NY - 1: the centres of NX x NY cells tiling [-1, 1]^2, so a cell's centre
 * keeps its coordinates at any scale. Layer l + 1's nodes read every node of layer l. */
typedef struct otc_substrate otc_substrate;

otc_status otc_substrate_new(const otc_neat_config *c, int scale, otc_substrate **out);
void otc_substrate_free(otc_substrate *s);
int otc_substrate_layers(const otc_substrate *s);          /* grids, input and output included */
int otc_substrate_size(const otc_substrate *s, int layer); /* nodes of grid `layer` */
void otc_substrate_coord(const otc_substrate *s, int layer, int node, float *x, float *y);
/* The weights into layer + 1 [size(layer + 1), size(layer)], row-major, and the biases of
 * layer + 1: writable, for painting by hand (NULL for an evolvable substrate). A run after
 * otc_substrate_weights sees the weights written since; to write again after a run, call it
 * again (one-row runs keep a transposed copy, refreshed when the weights may have changed). */
float *otc_substrate_weights(otc_substrate *s, int layer);
float *otc_substrate_biases(otc_substrate *s, int layer);

/* Paint s from the CPPN program cppn (built from the genome under the same config): every
 * (source, target) pair of consecutive layers is queried in batches. The weight output w,
 * clamped to [-1, 1], becomes 0 when |w| <= weight_threshold and else
 * sign(w) (|w| - threshold) / (1 - threshold) max_weight (Stanley et al. 2009); with leo, the
 * connection exists when the leo output is > 0 and its weight is w max_weight. With
 * bias_output, node biases are the bias output at (0, 0, x, y), scaled as weights. With
 * layer_input, every query also gives the layers' z (-1 for the input grid to 1 for the
 * output grid, evenly): z1 of the source layer, z2 of the target's (a bias: of the layer
 * before its node's, z2 its node's). */
otc_status otc_substrate_paint(otc_substrate *s, otc_neat_flat *cppn);
/* The substrate (at `scale`) the CPPN genome cppn paints, its program lowered into scratch
 * (NULL: a program of its own). */
otc_status otc_substrate_from_genome(const otc_neat_genome *cppn, const otc_neat_config *c,
                                     int scale, otc_neat_flat *scratch, otc_substrate **out);
/* The painted substrate's connection cost (Clune, Mouret and Lipson 2013; Huizinga, Mouret
 * and Clune 2014): *links the expressed links (painted weight not 0), *length2 the sum of
 * their squared lengths in the substrate's geometry: (x, y) of the two ends, and for a layered
 * substrate the layers' z as layer_input gives it (-1 for the input grid to 1 for the output
 * grid, evenly), so a link between neighbouring layers of L costs at least (2 / (L - 1))^2.
 * An evolvable substrate's nodes share one plane (its found network's enabled links). */
otc_status otc_substrate_cost(otc_substrate *s, double *links, double *length2);
/* x [batch, size(0)] -> y [batch, size(last)]: each layer act(W x + b). */
otc_status otc_substrate_forward(otc_substrate *s, const float *x, int batch, float *y);
/* The same into s's own rows, kept for the next run: *y points at [batch, size(last)], valid
 * until s runs again, is painted or freed. */
otc_status otc_substrate_run(otc_substrate *s, const float *x, int batch, const float **y);

/* Gradient training of a painted substrate's weights ([Hybrid] train_steps with
 * inheritance = baldwinian): the loss is the MSE between s's outputs for inputs x
 * [rows, size(0)] and targets t [rows, size(last)] (the op table's per-element loss, averaged),
 * its gradient backpropagated through the layers with the activation's derivative from the op
 * table. A weight that is 0 when training starts (a link the CPPN did not express) gets
 * gradient 0 and stays exactly 0, so training tunes only what the CPPN painted; biases train
 * with bias_output (without it the substrate has none). An evolvable substrate trains the
 * network its last paint found: every link the search placed (whatever its weight; links it
 * did not place stay absent), backpropagated over the network in topological order (the
 * search drops recurrent links, so it has one), and the neurons' biases with bias_output; the
 * trained values are written into that network (otc_substrate_es), which then runs. */
typedef struct {
    int steps;           /* Adam steps (PyTorch's defaults but the learning rate) */
    int batch_size;      /* rows per step; >= rows: every row every step (full batch) */
    float learning_rate; /* Adam's */
} otc_substrate_train_options;
/* o->steps steps on (x, t). Mini-batches take the next batch_size rows of an order shuffled
 * anew each pass by an RNG of a fixed seed, so the trained weights depend on s, x, t and o
 * alone (any thread, any run). Training stops early when the loss is not finite (the score
 * will show it). *loss (NULL: not wanted): the loss of the last step taken, before its update.
 * OTC_ERR_STATE for an evolvable substrate not painted. */
otc_status otc_substrate_train(otc_substrate *s, const float *x, const float *t, int rows,
                               const otc_substrate_train_options *o, float *loss);
/* What a task's substrates train on (Baldwinian hybrid HyperNEAT): inputs x [rows, size(0)],
 * targets t [rows, size(last)] and the config's [Hybrid] options (steps 0: no training). */
typedef struct {
    const float *x, *t;
    int rows;
    otc_substrate_train_options train;
} otc_substrate_lessons;
/* The config's [Hybrid] train_steps, batch_size and learning_rate as training options. */
otc_substrate_train_options otc_substrate_train_options_of(const otc_neat_config *c);
/* Trains s on e when e->train.steps > 0 (else leaves it as painted): what each evaluation
 * does between painting and scoring. */
otc_status otc_substrate_learn(otc_substrate *s, const otc_substrate_lessons *e);
/* The substrate (at `scale`) a task hands out of evolution: the genome's CPPN painted into a
 * substrate of its own and trained as its evaluations train it (*out NULL on failure). */
otc_status otc_substrate_from_genome_trained(const otc_neat_genome *cppn, const otc_neat_config *c,
                                             int scale, const otc_substrate_lessons *e,
                                             otc_substrate **out);
/* The loss of s on (x, t) and its gradient: gw[l] by layer l's weights (sized as
 * otc_substrate_weights(s, l), 0 where the weight is 0), gb[l] by its biases (0 without
 * bias_output). An evolvable substrate's: gw[0] by its network's conns (net->n_conns, in their
 * order), gb[0] by its nodes' biases (net->n_nodes, in their order; 0 for the inputs and
 * without bias_output). */
otc_status otc_substrate_gradient(otc_substrate *s, const float *x, const float *t, int rows,
                                  float *loss, float *const *gw, float *const *gb);

/* Substrates kept for a run's evaluations: each takes one painted by the genome's CPPN and
 * gives it back, so once every worker has had one an evaluation allocates no substrate
 * (weights, CPPN query rows, layer rows). Safe from several threads at once. It keeps those of
 * the config (compared by value) and scale it was last asked for. */
typedef struct otc_substrate_pool otc_substrate_pool;
otc_substrate_pool *otc_substrate_pool_new(void);
void otc_substrate_pool_free(otc_substrate_pool *p);
/* What otc_substrate_from_genome makes (the CPPN lowered into scratch, NULL: a program of its
 * own), in a kept substrate when there is one (p NULL: a new one, as that function does). Give
 * *out back with the same c and scale. */
otc_status otc_substrate_pool_paint(otc_substrate_pool *p, const otc_neat_genome *cppn,
                                    const otc_neat_config *c, int scale, otc_neat_flat *scratch,
                                    otc_substrate **out);
/* s (NULL: nothing) kept in p, or freed when p now keeps another config's or scale's. */
void otc_substrate_pool_give(otc_substrate_pool *p, const otc_neat_config *c, int scale,
                             otc_substrate *s);

otc_act otc_substrate_activation(const otc_substrate *s);
/* An evolvable substrate (two layers: the input and output grids) runs the network its last
 * paint found; this is that network (NULL for a layered substrate or before a paint). */
const otc_es_network *otc_substrate_es(const otc_substrate *s);
/* The NEAT config that network runs under (NULL for a layered substrate). */
const otc_neat_config *otc_substrate_es_config(const otc_substrate *s);

/* s as a graph: input "input" [batch, size(0)], per layer a matmul by layerN.weight
 * [size(l), size(l + 1)], layerN.bias added and the activation (slope alpha); one output.
 * An evolvable substrate's graph is its network's NEAT phenotype (input "x"). */
otc_status otc_substrate_graph(otc_substrate *s, float alpha, otc_graph **out);
/* s drawn as an SVG file, written whole: a layered substrate as one panel per grid, left to
 * right from the input, nodes at their coordinates ([-1, 1]^2, y down), and its strongest
 * painted links (at most 700) blue positive, red negative, wider and darker heavier; an
 * evolvable one as otc_es_save_svg draws it. */
otc_status otc_substrate_save_svg(otc_substrate *s, const char *title, const char *path);
/* The substrate the CPPN genome cppn paints (scale 1) as a graph: what otc evolve --out
 * saves for a [Substrate] config. */
otc_status otc_substrate_genome_graph(const otc_neat_genome *cppn, const otc_neat_config *c,
                                      otc_graph **out);

/* The visual discrimination task (Stanley, D'Ambrosio and Gauci 2009) on s, whose input and
 * output grids are 11 x 11 times the same scale: 75 trials (a 1x1-cell box at 25 positions,
 * a 3x3-cell box 5 cells right, down and diagonally, wrapped and moved into view); distance d
 * (in cells of the 11 x 11 field) from the large box's centre to the most active output.
 * fitness = the mean over trials of max(0, 30 - d^2) (the authors' code's trial score; 30 when
 * every trial hits); *hits = trials with d = 0;
 * *mean_d (unless NULL) = mean d, the paper's measure. */
#define OTC_VISUAL_TRIALS 75
otc_status otc_visual_score(otc_substrate *s, double *fitness, int *hits, double *mean_d);

/* The left-and-right retina problem (Kashtan and Alon 2005, as Verbancsics and Stanley 2011
 * use it for HyperNEAT-LEO): 8 pixels, a 2x2 block on the left and one on the right, as the
 * 4x2 input grid (columns 0-1 left, 2-3 right; row 0 the top). Pattern p (0 to 255): the left
 * block is p >> 4, the right p & 15, each a nibble of bits top-left (8), top-right (4),
 * bottom-left (2), bottom-right (1). Eight nibbles are left objects, their mirror images
 * right objects. */
#define OTC_RETINA_PATTERNS 256
bool otc_retina_left_object(int nibble);
bool otc_retina_right_object(int nibble);
/* Pattern p as the 8 inputs (1 lit, 0 dark), in the input grid's order. */
void otc_retina_pixels(int p, float *px);
/* The target for pattern p: left object AND right object (or OR with `any`). */
bool otc_retina_target(int p, bool any);
/* What the retina's substrate answers: AND (one output: a left object and a right object),
 * OR (one output: either), or SIDES (two outputs, the 2x1 output grid left to right: a left
 * object, a right object; the form Coleman's AHNI reproduces Verbancsics and Stanley 2011 in). */
typedef enum { OTC_RETINA_AND, OTC_RETINA_OR, OTC_RETINA_SIDES } otc_retina_goal;
/* s (input 4x2; one output, two for SIDES) on all 256 patterns: E = sum over patterns and
 * outputs of |y - target| (target 1 or 0), fitness = 1000 / (1 + E^2); *correct = patterns
 * whose every output is on its target's side of 0.5. answers (NULL: not wanted) gets each
 * pattern's outputs as answers, 1 above 0.5 else 0 (256 numbers, 512 for SIDES, pattern by
 * pattern). */
otc_status otc_retina_score(otc_substrate *s, otc_retina_goal goal, double *fitness, int *correct,
                            float *answers);

#endif
