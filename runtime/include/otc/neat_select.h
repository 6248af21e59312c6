/* Selection beyond fitness (docs/selection.md): the objectives of a genome, NSGA-II's fast
 * non-dominated sort and crowding distance, novelty search's archive, and a run's Pareto front. */
#ifndef OTC_NEAT_SELECT_H
#define OTC_NEAT_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "neat_config.h"
#include "neat_genome.h"

/* Most members a run's Pareto front keeps (the first found stay). */
#define OTC_NEAT_MAX_FRONT 1024
/* Most behaviours the novelty archive holds (none is added after that). */
#define OTC_NEAT_MAX_ARCHIVE 100000

/* Objective o of g in its own sense: fitness as evaluated (maximised); connections, nodes,
 * parameters and cost (minimised) counted from the genome's enabled genes. cost = one
 * multiply-add per enabled connection + 4 bytes per parameter (weights and biases as floats). */
double otc_neat_objective_value(otc_neat_objective o, const otc_neat_genome *g);
/* Any objective of g under config c: the above, or the substrate g paints under c (HyperNEAT)
 * for substrate_links and substrate_length (otc_substrate_cost; INFINITY when it cannot be
 * painted, NAN without a [Substrate]). */
double otc_neat_objective_of(const otc_neat_config *c, otc_neat_objective o,
                             const otc_neat_genome *g);

/* Deb et al.'s fast non-dominated sort of n points of m objectives, all minimised, point i's
 * at v[i * m .. i * m + m): rank[i] gets its front (0: not dominated by any point). Returns
 * the number of fronts, or -1 when out of memory. */
int otc_neat_nondominated_sort(int n, int m, const double *v, int *rank);
/* The same under Clune, Mouret and Lipson's (2013) stochastic Pareto dominance: each pair of
 * points (i < j) is compared on every objective with probability keep (drawn from seed, i and
 * j, so a sort is the same on any platform and thread count), else on the columns whose bits
 * are set in `always` alone (0: every objective). keep >= 1 is the plain sort. */
int otc_neat_nondominated_sort_stochastic(int n, int m, const double *v, int *rank, double keep,
                                          unsigned always, uint64_t seed);
/* NSGA-II's crowding distance of the k points idx[0 .. k) of one front: dist[idx[j]] = the sum
 * over objectives of the gap between its neighbours along that objective over the front's
 * range; the ends of each objective (and every point of a front of <= 2) get INFINITY. Ties
 * are ordered by index, so the result is the same on every platform. */
otc_status otc_neat_crowding_distance(int k, const int *idx, int m, const double *v, double *dist);

/* Behavioural diversity (Mouret and Doncieux 2012; the diversity objective): div[i] = the mean
 * distance from behaviour i of n (dim numbers each, at bc + i * dim) to the n - 1 others, by
 * novelty search's distance (the mean absolute difference of the numbers: on 0/1 answers, the
 * share that differ). 0 when n is 1. */
void otc_neat_behaviour_diversity(int n, int dim, const float *bc, double *div);

/* The novelty archive of a run under selection = novelty: *n behaviours of *dim numbers. */
struct otc_neat_population;
const float *otc_neat_novelty_archive(const struct otc_neat_population *p, int *n, int *dim);
double otc_neat_novelty_threshold(const struct otc_neat_population *p);
/* The behaviours of the last evaluated generation (*n of *dim numbers; NULL when its task gave
 * none), under any selection. */
const float *otc_neat_behaviours(const struct otc_neat_population *p, int *n, int *dim);

/* A run's Pareto front over the config's objectives: every genome evaluated since
 * otc_neat_track_front that no other evaluated genome dominates (equal objective values:
 * the first found). Call before the first step; OTC_ERR_NOMEM when out of memory. */
otc_status otc_neat_track_front(struct otc_neat_population *p);
int otc_neat_front_size(const struct otc_neat_population *p);
/* Member i (NULL when out of range), its objectives in their own sense (the config's order),
 * and the generation it was evaluated in. */
const otc_neat_genome *otc_neat_front_genome(const struct otc_neat_population *p, int i);
const double *otc_neat_front_values(const struct otc_neat_population *p, int i);
int otc_neat_front_generation(const struct otc_neat_population *p, int i);
/* The knee of n members (fitness maximised, cost minimised): with both scaled to [0, 1]
 * over the members, the one farthest beyond the line through the two ends; the fittest when
 * none lies beyond it (so never the cheap end). -1 when n <= 0. */
int otc_neat_knee(int n, const double *fitness, const double *cost);
/* The knee of the front over fitness and the first other objective; -1 when empty. */
int otc_neat_front_knee(const struct otc_neat_population *p);

#endif
