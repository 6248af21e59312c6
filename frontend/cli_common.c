/* Option parsing, --help text and error printing shared by every subcommand. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "otc/error.h"

/* Names from files and the command line reach the message through the arguments: the
 * whole message is made printable (otc_text_printable) before the terminal sees it. */
int otc_cli_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *msg = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (msg) {
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        va_end(ap);
        fprintf(stderr, "otc %s: %s\n", cmd, otc_text_printable(msg));
        free(msg);
    } else {
        fprintf(stderr, "otc %s: out of memory while reporting an error\n", cmd);
    }
    return OTC_EXIT_USAGE;
}

bool otc_cli_given(int argc, char **argv, const char *opt) {
    size_t n = strlen(opt);
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], opt, n) && (argv[i][n] == '\0' || argv[i][n] == '=')) return true;
    return false;
}

bool otc_cli_interactive(void) {
    return isatty(STDERR_FILENO) != 0;
}

/* Does argument `arg` name option `spec` (its long name or an alias after a comma:
 * "--out,--output,-o")? */
static bool names_option(const char *spec, const char *arg) {
    size_t len = strlen(arg);
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && !strncmp(p, arg, n)) return true;
        p += n;
        if (*p == ',') p++;
    }
    return false;
}

static void print_help(const char *cmd, const char *synopsis, const otc_opt *opts, int n) {
    printf("usage: otc %s %s\n\noptions:\n", cmd, synopsis);
    for (int i = 0; i < n; i++) {
        const char *help = opts[i].help ? opts[i].help : "";
        /* "VALUE: text" only when VALUE is one word and the option takes a value, so a help
         * text like "flag (default: x)" is printed whole */
        const char *colon = opts[i].kind == OTC_OPT_FLAG ? NULL : strstr(help, ": ");
        if (colon && memchr(help, ' ', (size_t)(colon - help))) colon = NULL;
        char left[64];
        if (colon)
            snprintf(left, sizeof left, "%s %.*s", opts[i].name, (int)(colon - help), help);
        else
            snprintf(left, sizeof left, "%s", opts[i].name);
        /* a name too long for the column gets a line of its own, so the texts stay aligned */
        if (strlen(left) > 28)
            printf("  %s\n  %-28s %s\n", left, "", colon ? colon + 2 : help);
        else
            printf("  %-28s %s\n", left, colon ? colon + 2 : help);
    }
    printf("  %-28s %s\n", "--help,-h", "show this help");
}

/* Decimal digits only (strtoull alone would take leading spaces and wrap "-1" around). */
bool otc_cli_parse_u64(const char *v, uint64_t *out) {
    if (!v || *v < '0' || *v > '9') return false;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end) return false;
    *out = (uint64_t)x;
    return true;
}

bool otc_cli_parse_int(const char *v, int *out) {
    const char *digits = v && (*v == '-' || *v == '+') ? v + 1 : v;
    if (!digits || *digits < '0' || *digits > '9') return false;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < INT_MIN || x > INT_MAX) return false;
    *out = (int)x;
    return true;
}

static int parse_value(const char *cmd, const otc_opt *o, const char *v) {
    char *end = NULL;
    errno = 0;
    switch (o->kind) {
    case OTC_OPT_STRING:
        if (!*v) { /* no path, column list or name is empty: it would mean "none" silently */
            otc_cli_error(cmd, "%.*s needs a value, not an empty one (try 'otc %s --help')",
                          (int)strcspn(o->name, ","), o->name, cmd);
            return OTC_EXIT_USAGE;
        }
        *(const char **)o->dest = v;
        return 0;
    case OTC_OPT_TEXT:
        *(const char **)o->dest = v;
        return 0;
    case OTC_OPT_INT:
        if (otc_cli_parse_int(v, (int *)o->dest)) return 0;
        otc_cli_error(cmd, "bad value '%s' for %s (expected an integer from %d to %d)", v, o->name,
                      INT_MIN, INT_MAX);
        return OTC_EXIT_USAGE;
    case OTC_OPT_RANGE: {
        const otc_opt_range *r = o->dest;
        int x;
        if (otc_cli_parse_int(v, &x) && x >= r->min && x <= r->max) {
            *r->value = x;
            return 0;
        }
        otc_cli_error(cmd, "bad value '%s' for %s (expected an integer from %d to %d)", v, o->name,
                      r->min, r->max);
        return OTC_EXIT_USAGE;
    }
    case OTC_OPT_U64:
        if (otc_cli_parse_u64(v, (uint64_t *)o->dest)) return 0;
        otc_cli_error(cmd, "bad value '%s' for %s (expected an integer from 0 to %" PRIu64 ")", v,
                      o->name, UINT64_MAX);
        return OTC_EXIT_USAGE;
    case OTC_OPT_FLOAT: {
        double x = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(x)) /* no option means anything by nan, inf */
            break;
        *(double *)o->dest = x;
        return 0;
    }
    case OTC_OPT_FLAG:
        return 0;
    }
    otc_cli_error(cmd, "bad value '%s' for %s (expected a finite number; try 'otc %s --help')", v,
                  o->name, cmd);
    return OTC_EXIT_USAGE;
}

/* "unknown option", with the closest of the command's option names when one is near. */
static int unknown_option(const char *cmd, const otc_opt *opts, int n_opts, const char *name) {
    const char *names[256];
    char copies[256][64];
    int n = 0;
    for (int k = 0; k < n_opts; k++)
        for (const char *p = opts[k].name; *p && n < 256;) {
            size_t len = strcspn(p, ",");
            snprintf(copies[n], sizeof copies[n], "%.*s", (int)len, p);
            names[n] = copies[n];
            n++;
            p += len;
            if (*p == ',') p++;
        }
    const char *near = otc_cli_closest(name, names, n);
    if (near)
        return otc_cli_error(cmd, "unknown option '%s' (did you mean %s? try 'otc %s --help')",
                             name, near, cmd);
    return otc_cli_error(cmd, "unknown option '%s' (try 'otc %s --help')", name, cmd);
}

int otc_cli_parse(const char *cmd, const char *synopsis, const otc_opt *opts, int n_opts, int argc,
                  char **argv, const char **pos, int min_pos, int max_pos) {
    int n_pos = 0;
    bool only_positionals = false;
    /* the argument that gave each option, or NULL: an option is given once, since a repeat
     * either does nothing or silently drops the first value (--drop a --drop b) */
    const char *given[256] = {0};
    size_t given_len[256];
    if (n_opts > 256) return otc_cli_error(cmd, "internal: more than 256 options");
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_positionals && !strcmp(arg, "--")) {
            only_positionals = true;
            continue;
        }
        if (!only_positionals && arg[0] == '-' && arg[1] != '\0') {
            if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
                print_help(cmd, synopsis, opts, n_opts);
                return -1;
            }
            /* --name=value is accepted too */
            char name[64];
            const char *value = NULL;
            const char *eq = strchr(arg, '=');
            size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
            if (len >= sizeof name) len = sizeof name - 1;
            memcpy(name, arg, len);
            name[len] = '\0';
            if (eq) value = eq + 1;
            const otc_opt *o = NULL;
            for (int k = 0; k < n_opts && !o; k++)
                if (names_option(opts[k].name, name)) o = &opts[k];
            if (!o) return unknown_option(cmd, opts, n_opts, name);
            size_t k = (size_t)(o - opts);
            if (given[k] && given_len[k] == len && !strncmp(given[k], name, len))
                return otc_cli_error(cmd, "%s given twice (try 'otc %s --help')", name, cmd);
            if (given[k])
                return otc_cli_error(cmd, "%.*s given twice (as %.*s and %s; try 'otc %s --help')",
                                     (int)strcspn(o->name, ","), o->name, (int)given_len[k],
                                     given[k], name, cmd);
            given[k] = arg;
            given_len[k] = len;
            if (o->kind == OTC_OPT_FLAG) {
                if (value) return otc_cli_error(cmd, "%s takes no value", name);
                *(bool *)o->dest = true;
                continue;
            }
            if (!value) {
                if (i + 1 >= argc)
                    return otc_cli_error(cmd, "%s needs a value (try 'otc %s --help')", name, cmd);
                value = argv[++i];
            }
            if (parse_value(cmd, o, value)) return OTC_EXIT_USAGE;
            continue;
        }
        if (n_pos >= max_pos)
            return otc_cli_error(cmd, "unexpected argument '%s' (try 'otc %s --help')", arg, cmd);
        pos[n_pos++] = arg;
    }
    if (n_pos < min_pos)
        return otc_cli_error(cmd, "missing argument (usage: otc %s %s)", cmd, synopsis);
    for (int i = n_pos; i < max_pos; i++) pos[i] = NULL;
    return 0;
}
