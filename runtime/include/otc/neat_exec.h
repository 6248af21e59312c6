/* The exec: task's protocol as otc reads it: one line of an environment parsed, the reader
 * every exec:PROGRAM evaluation uses, callable on any buffer (tests, fuzzing). */
#ifndef OTC_NEAT_EXEC_H
#define OTC_NEAT_EXEC_H

#include <stdbool.h>

typedef struct {
    double reward; /* 'step': the reward */
    bool done;     /* 'step': DONE was 1 */
    int n_obs;     /* observations read into v: n_in, or 0 on a last step that left them out */
} otc_neat_exec_reply;

/* line (NUL-terminated, without its newline; taken apart in place) as the answer to 'reset'
 * (step false: "obs X1 .. Xn") or to 'act' (step true: "step REWARD DONE [X1 .. Xn]", DONE 0
 * or 1, the observation left out only when DONE is 1), n = n_in >= 1. v has room for n_in + 3
 * doubles; on success v[0 .. n_obs) is the observation, every number finite. False on
 * anything else (the caller names what it expected). */
bool otc_neat_exec_parse(char *line, bool step, int n_in, double *v, otc_neat_exec_reply *r);

/* An optional "bc B1 .. Bk" line (an episode's behaviour for novelty search): k, 1 <= k <= max,
 * with b[0 .. k) filled, every number finite; 0 when the line is not one or is malformed. */
int otc_neat_exec_parse_bc(char *line, double *b, int max);

#endif
