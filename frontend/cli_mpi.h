/* `otc evolve` under mpirun (cli_mpi.c): only cmd_evolve.c needs MPI's types. */
#ifndef OTC_CLI_MPI_H
#define OTC_CLI_MPI_H

#include <stdbool.h>

#include "otc/neat_mpi.h"

/* MPI (cli_mpi.c): was this process started by mpirun, and libotc_mpi's functions, loaded on
 * first use (NULL with otc_last_error set when this otc has no MPI support). */
bool otc_cli_mpi_launched(void);
typedef struct {
    otc_status (*init)(int *rank, int *size);
    otc_status (*remote)(const otc_neat_mpi_options *o, const otc_neat_remote **out);
    otc_status (*serve)(const otc_neat_task *task, const otc_neat_config *c, int threads);
    otc_neat_mpi_traffic (*traffic)(void);
    void (*finish)(bool ok);
} otc_cli_mpi;
const otc_cli_mpi *otc_cli_mpi_load(void);

#endif
