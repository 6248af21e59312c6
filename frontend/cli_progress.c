/* The progress bar commands show on a terminal: one line on stderr, redrawn in place, at
 * most ten times a second so a fast loop is not slowed down by drawing. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

double otc_cli_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void otc_cli_progress_start(otc_cli_progress *p, const char *label, int total) {
    memset(p, 0, sizeof *p);
    p->active = otc_cli_interactive() && total > 0;
    p->total = total;
    p->started = otc_cli_seconds();
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
}

void otc_cli_progress_update(otc_cli_progress *p, int done, const char *status) {
    if (!p->active) return;
    static double last_draw;
    double now = otc_cli_seconds();
    if (done < p->total && now - last_draw < 0.1) return;
    last_draw = now;
    enum { WIDTH = 24 };
    int fill = (int)((long long)done * WIDTH / (p->total > 0 ? p->total : 1));
    if (fill > WIDTH) fill = WIDTH;
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = '\0';
    /* \r and erase-to-end-of-line: redraw in place without leftovers from a longer line */
    fprintf(stderr, "\r%s [%s] %d/%d %s\033[K", p->label, bar, done, p->total,
            status ? status : "");
    fflush(stderr);
}

void otc_cli_progress_end(otc_cli_progress *p) {
    if (!p->active) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    p->active = false;
}
