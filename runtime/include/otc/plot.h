/* A small SVG line-plot writer: named series, axes with ticks, a legend and a title. Used for
 * training curves (loss per epoch) and evolution curves (fitness per generation). */
#ifndef OTC_PLOT_H
#define OTC_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

typedef struct otc_plot otc_plot;

/* Any of the texts may be NULL. NULL (with otc_last_error set) only when out of memory. */
otc_plot *otc_plot_new(const char *title, const char *x_label, const char *y_label);
void otc_plot_free(otc_plot *p);

/* Canvas size in pixels (default 720 x 440; each at least 160 x 120). */
otc_status otc_plot_set_size(otc_plot *p, int width, int height);
/* Logarithmic y axis (losses); points with y <= 0 are then left out. */
void otc_plot_set_log_y(otc_plot *p, bool log_y);

/* A new, empty series; returns its index (0, 1, ...) or -1 with otc_last_error set.
 * Series are drawn in order, in a fixed colour cycle, and listed in the legend. */
int otc_plot_series(otc_plot *p, const char *name);
/* Append a point. A non-finite x or y is kept as a gap: the line breaks there. */
otc_status otc_plot_point(otc_plot *p, int series, double x, double y);
/* A whole series at once (x NULL means 0, 1, ..., n-1); returns its index or -1. */
int otc_plot_add_series(otc_plot *p, const char *name, int n, const float *x, const float *y);

/* The SVG document as a NUL-terminated string the caller frees with free(); *len (optional)
 * gets its length. A plot without any finite point still renders (empty axes, "no data"). */
otc_status otc_plot_svg(const otc_plot *p, char **svg, size_t *len);
/* Render and write atomically (temporary file, then rename). */
otc_status otc_plot_save_svg(const otc_plot *p, const char *path);

/* Tick positions for an axis spanning [lo, hi]: steps of 1, 2 or 5 times a power of ten,
 * about `target` of them. Writes at most max ticks into ticks and returns how many; *step
 * (optional) gets the spacing. Exposed for tests and for anyone drawing their own axes. */
int otc_plot_nice_ticks(double lo, double hi, int target, double *ticks, int max, double *step);

#endif
