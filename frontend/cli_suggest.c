/* "Did you mean": the closest of a list of names to a mistyped one, by edit distance. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "otc/neat.h"

/* Levenshtein distance, capped: names longer than this are not worth a suggestion. */
#define MAX_NAME 64

static int distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > MAX_NAME || lb > MAX_NAME) return MAX_NAME + 1;
    int row[MAX_NAME + 1];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *otc_cli_closest(const char *word, const char *const *names, int n) {
    if (!word) return NULL;
    /* a third of the word's length, at least 1 and at most 3 edits: close enough to be a typo */
    if (strlen(word) < 3) return NULL; /* "-x": every short name is one edit away */
    int limit = (int)strlen(word) / 3;
    if (limit < 1) limit = 1;
    if (limit > 3) limit = 3;
    const char *best = NULL;
    int best_d = limit + 1;
    for (int i = 0; i < n; i++) {
        if (!names[i]) continue;
        int d = distance(word, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    return best;
}

int otc_cli_check_task(const char *cmd, const char *spec) {
    if (!strncmp(spec, "csv:", 4) || !strncmp(spec, "exec:", 5)) return 0;
    const char *const *names;
    int n = otc_neat_task_names(&names);
    for (int i = 0; i < n; i++)
        if (!strcmp(spec, names[i])) return 0;
    const char *near = otc_cli_closest(spec, names, n);
    char ss[128];
    otc_cli_printable(spec, ss, sizeof ss);
    if (near) return otc_cli_error(cmd, "unknown task '%s' (did you mean %s?)", ss, near);
    return 0; /* the task factory's message lists them all */
}
