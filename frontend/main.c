/* The `otc` command: global options and dispatch to the subcommands. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "otc/otc.h"

#define OTC_COMMAND(name) OTC_COMMAND_DECL(name)
#include "commands.inc"
#undef OTC_COMMAND

typedef struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} command;

static const command commands[] = {
#define OTC_COMMAND(name) {#name, otc_cmd_##name, otc_cmd_##name##_summary},
#include "commands.inc"
#undef OTC_COMMAND
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out, "usage: otc [--help] [--version] COMMAND [ARGS]\n\n"
                 "Evolve, train and compile small neural networks on the CPU.\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'otc COMMAND --help' for a command's options.\n");
}

/* Output lost is a failure, whichever command wrote it (a full disk, /dev/full, a closed
 * stdout): checked once here, as the last buffered bytes reach the file only now. */
static int finish(int rc) {
    errno = 0;
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc != OTC_EXIT_USAGE) {
        fprintf(stderr, "otc: writing to standard output failed%s%s\n", errno ? ": " : "",
                errno ? strerror(errno) : "");
        return OTC_EXIT_USAGE;
    }
    return rc;
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return OTC_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return OTC_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("otc %s\n", OTC_VERSION);
        return OTC_EXIT_OK;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "otc: unknown command '%s' (try 'otc --help')\n", argv[1]);
    return OTC_EXIT_USAGE;
}

int main(int argc, char **argv) {
    return finish(dispatch(argc, argv));
}
