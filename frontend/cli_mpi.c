/* `otc evolve` under mpirun: tells whether MPI started this process and loads libotc_mpi (from
 * beside libotc.so) only then, so no other command pays for libmpi at start-up. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "otc/error.h"

bool otc_cli_mpi_launched(void) {
    /* Open MPI's launcher sets the first, any PMIx launcher the second. */
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK");
}

static void *symbol(void *h, const char *name, bool *ok) {
    void *p = dlsym(h, name);
    if (!p) *ok = false;
    return p;
}

const otc_cli_mpi *otc_cli_mpi_load(void) {
    static otc_cli_mpi api;
    static bool loaded;
    if (loaded) return &api;
    Dl_info info;
    char here[PATH_MAX], path[PATH_MAX + 32];
    if (!dladdr((void *)otc_neat_step, &info) || !info.dli_fname ||
        !realpath(info.dli_fname, here)) {
        otc_fail(OTC_ERR_STATE, "MPI: cannot tell where libotc is");
        return NULL;
    }
    char *slash = strrchr(here, '/');
    snprintf(path, sizeof path, "%.*s/libotc_mpi.so.0", slash ? (int)(slash - here) : 1,
             slash ? here : ".");
    /* Global: Open MPI's own components, dlopen()ed by libmpi, resolve its symbols. */
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        otc_fail(OTC_ERR_UNSUPPORTED,
                 "started by mpirun, but this otc has no MPI support (%s); build it with Open "
                 "MPI installed (scripts/install-deps.sh)",
                 dlerror());
        return NULL;
    }
    bool ok = true;
    api.init = (otc_status(*)(int *, int *))symbol(h, "otc_neat_mpi_init", &ok);
    api.remote = (otc_status(*)(const otc_neat_mpi_options *, const otc_neat_remote **))symbol(
        h, "otc_neat_mpi_remote", &ok);
    api.serve = (otc_status(*)(const otc_neat_task *, const otc_neat_config *, int))symbol(
        h, "otc_neat_mpi_serve", &ok);
    api.traffic = (otc_neat_mpi_traffic(*)(void))symbol(h, "otc_neat_mpi_traffic_so_far", &ok);
    api.finish = (void (*)(bool))symbol(h, "otc_neat_mpi_finish", &ok);
    if (!ok) {
        otc_fail(OTC_ERR_STATE, "MPI: %s lacks otc's functions (another version?)", path);
        return NULL;
    }
    loaded = true;
    return &api;
}
