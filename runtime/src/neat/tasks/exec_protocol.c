/* The exec: task's reader of an environment's lines (otc/neat_exec.h): words split on blanks,
 * numbers by strtod, every one finite, the count checked against num_inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "otc/neat_exec.h"

/* Up to `max` numbers in s; *count how many. False on anything that is not a finite number,
 * or more than max of them. */
static bool numbers(char *s, double *v, int max, int *count) {
    int n = 0;
    for (char *save = NULL, *w = strtok_r(s, " \t\r", &save); w;
         w = strtok_r(NULL, " \t\r", &save)) {
        char *end;
        double d = strtod(w, &end);
        if (*end || end == w || !isfinite(d) || n >= max) return false;
        v[n++] = d;
    }
    *count = n;
    return true;
}

bool otc_neat_exec_parse(char *line, bool step, int n_in, double *v, otc_neat_exec_reply *r) {
    int n = 0;
    *r = (otc_neat_exec_reply){0, false, 0};
    if (!line || n_in < 1) return false;
    if (!step) {
        if (strncmp(line, "obs", 3) || (line[3] != ' ' && line[3] != '\0')) return false;
        if (!numbers(line + 3, v, n_in + 3, &n) || n != n_in) return false;
        r->n_obs = n_in;
        return true;
    }
    if (strncmp(line, "step ", 5) || !numbers(line + 5, v, n_in + 3, &n) || n < 2) return false;
    if (v[1] != 0 && v[1] != 1) return false;
    if (v[1] == 1 ? n != 2 && n != n_in + 2 : n != n_in + 2) return false;
    r->reward = v[0];
    r->done = v[1] == 1;
    r->n_obs = n - 2;
    memmove(v, v + 2, sizeof *v * (size_t)r->n_obs);
    return true;
}

int otc_neat_exec_parse_bc(char *line, double *b, int max) {
    int n = 0;
    if (!line || max < 1 || strncmp(line, "bc ", 3) || !numbers(line + 3, b, max, &n) || n < 1)
        return 0;
    return n;
}
