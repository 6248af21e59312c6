/* NEAT evaluation spread over MPI processes: rank 0 owns the population and hands genomes
 * out in chunks; every other rank evaluates them with its own threads and sends back fitness
 * and the weights hybrid training wrote. Link libotc_mpi (built when Open MPI is found). */
#ifndef OTC_NEAT_MPI_H
#define OTC_NEAT_MPI_H

#include <stdbool.h>

#include "otc/neat.h"

typedef struct {
    /* Rank 0 gives up, naming the rank and the generation, when a rank holding work has sent
     * nothing for this long. <= 0: 600 s. */
    double timeout_seconds;
} otc_neat_mpi_options;

/* Starts MPI; *rank is this process's rank, *size the number of ranks. */
otc_status otc_neat_mpi_init(int *rank, int *size);

/* Rank 0: the remote evaluator for otc_neat_run_options.remote (rank 0 evaluates its share
 * too). Valid until otc_neat_mpi_finish. */
otc_status otc_neat_mpi_remote(const otc_neat_mpi_options *o, const otc_neat_remote **out);

/* Ranks 1, 2, ...: evaluate what rank 0 sends, with `threads` threads, until it says stop.
 * The task and config must be those rank 0 runs (the same command line). */
otc_status otc_neat_mpi_serve(const otc_neat_task *task, const otc_neat_config *c, int threads);

/* Rank 0: what distribution cost so far. */
typedef struct {
    long long bytes_sent, bytes_received;
    long genomes_sent; /* to other ranks */
    long genomes_local;
} otc_neat_mpi_traffic;
otc_neat_mpi_traffic otc_neat_mpi_traffic_so_far(void);

/* The end. Rank 0 with ok: the other ranks are told to stop, then MPI ends. Without ok (a
 * rank failed or stopped answering): the whole job is aborted with exit status 2. */
void otc_neat_mpi_finish(bool ok);

#endif
