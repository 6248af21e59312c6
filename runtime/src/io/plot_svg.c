/* The SVG line-plot writer behind otc/plot.h: data ranges, nice ticks, and the SVG text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otc/file.h"
#include "otc/plot.h"
#include "otc/text.h"

typedef struct {
    char *name;
    int n, cap;
    double *x, *y;
} series;

struct otc_plot {
    char *title, *x_label, *y_label;
    int width, height;
    bool log_y;
    int n_series, cap_series;
    series *s;
};

/* Colour-blind-friendly categorical palette (Tableau 10), cycled. */
static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define N_PALETTE (int)(sizeof palette / sizeof palette[0])

static char *dup_or_null(const char *s, bool *failed) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *failed = true;
    return d;
}

otc_plot *otc_plot_new(const char *title, const char *x_label, const char *y_label) {
    otc_plot *p = calloc(1, sizeof *p);
    if (!p) {
        otc_fail(OTC_ERR_NOMEM, "plot: out of memory");
        return NULL;
    }
    bool failed = false;
    p->title = dup_or_null(title, &failed);
    p->x_label = dup_or_null(x_label, &failed);
    p->y_label = dup_or_null(y_label, &failed);
    p->width = 720;
    p->height = 440;
    if (failed) {
        otc_plot_free(p);
        otc_fail(OTC_ERR_NOMEM, "plot: out of memory");
        return NULL;
    }
    return p;
}

void otc_plot_free(otc_plot *p) {
    if (!p) return;
    for (int i = 0; i < p->n_series; i++) {
        free(p->s[i].name);
        free(p->s[i].x);
        free(p->s[i].y);
    }
    free(p->s);
    free(p->title);
    free(p->x_label);
    free(p->y_label);
    free(p);
}

otc_status otc_plot_set_size(otc_plot *p, int width, int height) {
    if (!p) return otc_fail(OTC_ERR_ARG, "plot: NULL plot");
    if (width < 160 || height < 120 || width > 20000 || height > 20000)
        return otc_fail(OTC_ERR_ARG, "plot: size %dx%d out of range (160x120 .. 20000x20000)",
                        width, height);
    p->width = width;
    p->height = height;
    return OTC_OK;
}

void otc_plot_set_log_y(otc_plot *p, bool log_y) {
    if (p) p->log_y = log_y;
}

int otc_plot_series(otc_plot *p, const char *name) {
    if (!p) {
        otc_fail(OTC_ERR_ARG, "plot: NULL plot");
        return -1;
    }
    if (p->n_series == p->cap_series) {
        int cap = p->cap_series ? 2 * p->cap_series : 4;
        series *s = realloc(p->s, (size_t)cap * sizeof *s);
        if (!s) {
            otc_fail(OTC_ERR_NOMEM, "plot: out of memory");
            return -1;
        }
        p->s = s;
        p->cap_series = cap;
    }
    series *s = &p->s[p->n_series];
    memset(s, 0, sizeof *s);
    bool failed = false;
    s->name = dup_or_null(name, &failed);
    if (failed) {
        otc_fail(OTC_ERR_NOMEM, "plot: out of memory");
        return -1;
    }
    return p->n_series++;
}

otc_status otc_plot_point(otc_plot *p, int index, double x, double y) {
    if (!p) return otc_fail(OTC_ERR_ARG, "plot: NULL plot");
    if (index < 0 || index >= p->n_series)
        return otc_fail(OTC_ERR_ARG, "plot: no series %d (there are %d)", index, p->n_series);
    series *s = &p->s[index];
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        double *nx = realloc(s->x, (size_t)cap * sizeof *nx);
        if (!nx) return otc_fail(OTC_ERR_NOMEM, "plot: out of memory");
        s->x = nx;
        double *ny = realloc(s->y, (size_t)cap * sizeof *ny);
        if (!ny) return otc_fail(OTC_ERR_NOMEM, "plot: out of memory");
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n] = y;
    s->n++;
    return OTC_OK;
}

int otc_plot_add_series(otc_plot *p, const char *name, int n, const float *x, const float *y) {
    if (n < 0 || (n > 0 && !y)) {
        otc_fail(OTC_ERR_ARG, "plot: series '%s' has no data", name ? name : "");
        return -1;
    }
    int idx = otc_plot_series(p, name);
    if (idx < 0) return -1;
    for (int i = 0; i < n; i++)
        if (otc_plot_point(p, idx, x ? (double)x[i] : (double)i, (double)y[i]) != OTC_OK) return -1;
    return idx;
}

int otc_plot_nice_ticks(double lo, double hi, int target, double *ticks, int max, double *step) {
    if (step) *step = 0;
    if (!isfinite(lo) || !isfinite(hi) || hi < lo || max <= 0) return 0;
    if (hi == lo) {
        ticks[0] = lo;
        return 1;
    }
    if (target < 1) target = 1;
    double raw = (hi - lo) / target;
    double mag = pow(10.0, floor(log10(raw)));
    double norm = raw / mag;
    double st = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
    if (!(st > 0) || !isfinite(st)) return 0;
    if (step) *step = st;
    /* Tolerances of a millionth of a step absorb the rounding of lo/st. */
    double k0 = ceil(lo / st - 1e-6);
    int n = 0;
    for (double k = k0; n < max; k += 1) {
        double t = k * st;
        if (t > hi + st * 1e-6) break;
        if (fabs(t) < st * 1e-6) t = 0; /* no "-0" */
        ticks[n++] = t;
    }
    return n;
}

/* ---- rendering ---- */

typedef struct {
    double lo, hi; /* axis range in plotted units (log10 for a log axis) */
    double p0, p1; /* pixel positions of lo and hi */
} axis;

static double ax_map(const axis *a, double v) {
    return a->p0 + (v - a->lo) / (a->hi - a->lo) * (a->p1 - a->p0);
}

static bool point_ok(const otc_plot *p, double x, double y) {
    return isfinite(x) && isfinite(y) && (!p->log_y || y > 0);
}

/* Tick label: as many decimals as the step needs, %g for very large or small values. */
static void tick_label(char *buf, size_t n, double v, double step) {
    double mag = fabs(v);
    if (mag != 0 && (mag >= 1e6 || mag < 1e-4 || (step > 0 && step < 1e-4))) {
        snprintf(buf, n, "%g", v);
        return;
    }
    int dec = step > 0 && step < 1 ? (int)ceil(-log10(step) - 1e-9) : 0;
    snprintf(buf, n, "%.*f", dec, v);
}

static void draw_x_axis(otc_text *b, const axis *ax, double ybottom, double ytop) {
    double ticks[32], step;
    int n = otc_plot_nice_ticks(ax->lo, ax->hi, 6, ticks, 32, &step);
    for (int i = 0; i < n; i++) {
        double px = ax_map(ax, ticks[i]);
        char label[64];
        tick_label(label, sizeof label, ticks[i], step);
        otc_text_printf(
            b,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e5e5e5\"/>\n"
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>\n"
            "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n",
            px, ytop, px, ybottom, px, ybottom, px, ybottom + 5, px, ybottom + 19, label);
    }
}

static void y_tick(otc_text *b, double py, double xleft, double xright, const char *label,
                   bool major) {
    otc_text_printf(b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\"/>\n",
                    xleft, py, xright, py, major ? "#e5e5e5" : "#f3f3f3");
    if (!label) return;
    otc_text_printf(b,
                    "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>\n"
                    "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n",
                    xleft - 5, py, xleft, py, xleft - 8, py + 4, label);
}

static void draw_y_axis(otc_text *b, const otc_plot *p, const axis *ax, double xleft,
                        double xright) {
    if (!p->log_y) {
        double ticks[32], step;
        int n = otc_plot_nice_ticks(ax->lo, ax->hi, 6, ticks, 32, &step);
        for (int i = 0; i < n; i++) {
            char label[64];
            tick_label(label, sizeof label, ticks[i], step);
            y_tick(b, ax_map(ax, ticks[i]), xleft, xright, label, true);
        }
        return;
    }
    /* Log axis: labelled decades, faint 2..9 minor lines when few decades are shown. */
    int e0 = (int)floor(ax->lo + 1e-9), e1 = (int)ceil(ax->hi - 1e-9);
    int every = (e1 - e0) > 8 ? (e1 - e0 + 7) / 8 : 1;
    for (int e = e0; e <= e1; e++) {
        if (e >= ax->lo - 1e-9 && e <= ax->hi + 1e-9 && (e - e0) % every == 0) {
            char label[64];
            double v = pow(10.0, e);
            if (e >= -4 && e <= 5)
                snprintf(label, sizeof label, "%.*f", e < 0 ? -e : 0, v);
            else
                snprintf(label, sizeof label, "1e%d", e);
            y_tick(b, ax_map(ax, e), xleft, xright, label, true);
        }
        if (e1 - e0 <= 4)
            for (int m = 2; m <= 9; m++) {
                double lv = e + log10((double)m);
                if (lv > ax->lo && lv < ax->hi)
                    y_tick(b, ax_map(ax, lv), xleft, xright, NULL, false);
            }
    }
}

static void draw_series(otc_text *b, const otc_plot *p, const series *s, const char *colour,
                        const axis *ax, const axis *ay) {
    int finite = 0;
    for (int i = 0; i < s->n; i++) finite += point_ok(p, s->x[i], s->y[i]);
    bool markers = finite <= 40; /* few points: show where they are */
    otc_text_printf(
        b,
        "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\" "
        "d=\"",
        colour);
    int run = 0; /* points in the current unbroken segment */
    for (int i = 0; i < s->n; i++) {
        if (!point_ok(p, s->x[i], s->y[i])) {
            run = 0;
            continue;
        }
        double y = p->log_y ? log10(s->y[i]) : s->y[i];
        otc_text_printf(b, "%s%.2f %.2f ", run ? "L" : "M", ax_map(ax, s->x[i]), ax_map(ay, y));
        run++;
    }
    otc_text_printf(b, "\"/>\n");
    /* Markers, and always a dot for a point with no neighbour (a line would not show it). */
    for (int i = 0; i < s->n; i++) {
        if (!point_ok(p, s->x[i], s->y[i])) continue;
        bool prev = i > 0 && point_ok(p, s->x[i - 1], s->y[i - 1]);
        bool next = i + 1 < s->n && point_ok(p, s->x[i + 1], s->y[i + 1]);
        if (!markers && (prev || next)) continue;
        double y = p->log_y ? log10(s->y[i]) : s->y[i];
        otc_text_printf(b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n",
                        ax_map(ax, s->x[i]), ax_map(ay, y), colour);
    }
}

/* How much of the data a box would hide: points and points along each segment inside it. */
static int covered(const otc_plot *p, const axis *ax, const axis *ay, double x0, double y0,
                   double x1, double y1) {
    int hits = 0;
    for (int k = 0; k < p->n_series; k++) {
        const series *s = &p->s[k];
        for (int i = 0; i < s->n; i++) {
            if (!point_ok(p, s->x[i], s->y[i])) continue;
            double px = ax_map(ax, s->x[i]), py = ax_map(ay, p->log_y ? log10(s->y[i]) : s->y[i]);
            bool next = i + 1 < s->n && point_ok(p, s->x[i + 1], s->y[i + 1]);
            double qx = px, qy = py;
            if (next) {
                qx = ax_map(ax, s->x[i + 1]);
                qy = ax_map(ay, p->log_y ? log10(s->y[i + 1]) : s->y[i + 1]);
            }
            /* samples every few pixels, so a long segment through a corner counts */
            double len = fabs(qx - px) + fabs(qy - py);
            int steps = next ? 1 + (int)fmin(len / 4, 256) : 1;
            for (int t = 0; t < steps; t++) {
                double f = (double)t / steps, x = px + (qx - px) * f, y = py + (qy - py) * f;
                hits += x >= x0 && x <= x1 && y >= y0 && y <= y1;
            }
        }
    }
    return hits;
}

/* The legend goes in the corner of the plot area where it hides the least data (top right
 * when that is a tie, where a falling loss curve leaves room). */
static void draw_legend(otc_text *b, const otc_plot *p, const axis *ax, const axis *ay) {
    int named = 0;
    size_t longest = 0;
    for (int i = 0; i < p->n_series; i++)
        if (p->s[i].name) {
            named++;
            size_t l = strlen(p->s[i].name);
            if (l > longest) longest = l;
        }
    if (!named) return;
    if (longest > 40) longest = 40;
    double w = 34 + 7.0 * (double)longest, h = 8 + 18.0 * named;
    double left = ax->p0, right = ax->p1, top = ay->p1, bottom = ay->p0;
    double cx[4] = {right - w - 8, left + 8, right - w - 8, left + 8};
    double cy[4] = {top + 8, top + 8, bottom - h - 8, bottom - h - 8};
    int best = 0, best_hits = -1;
    for (int k = 0; k < 4; k++) {
        int hits = covered(p, ax, ay, cx[k], cy[k], cx[k] + w, cy[k] + h);
        if (best_hits < 0 || hits < best_hits) best = k, best_hits = hits;
    }
    double x = cx[best], y = cy[best];
    otc_text_printf(
        b,
        "<g class=\"legend\">\n<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
        "fill=\"white\" fill-opacity=\"0.85\" stroke=\"#bbb\"/>\n",
        x, y, w, h);
    int row = 0;
    for (int i = 0; i < p->n_series; i++) {
        if (!p->s[i].name) continue;
        double ly = y + 4 + 18.0 * row + 9;
        otc_text_printf(b,
                        "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
                        "stroke-width=\"2\"/>\n<text x=\"%.2f\" y=\"%.2f\">",
                        x + 6, ly, x + 26, ly, palette[i % N_PALETTE], x + 30, ly + 4);
        otc_text_xml(b, p->s[i].name);
        otc_text_printf(b, "</text>\n");
        row++;
    }
    otc_text_printf(b, "</g>\n");
}

/* Data range over the drawable points; false when there are none. */
static bool data_range(const otc_plot *p, double *x0, double *x1, double *y0, double *y1) {
    bool any = false;
    for (int k = 0; k < p->n_series; k++)
        for (int i = 0; i < p->s[k].n; i++) {
            double x = p->s[k].x[i], y = p->s[k].y[i];
            if (!point_ok(p, x, y)) continue;
            if (p->log_y) y = log10(y);
            if (!any) {
                *x0 = *x1 = x;
                *y0 = *y1 = y;
                any = true;
            }
            if (x < *x0) *x0 = x;
            if (x > *x1) *x1 = x;
            if (y < *y0) *y0 = y;
            if (y > *y1) *y1 = y;
        }
    return any;
}

otc_status otc_plot_svg(const otc_plot *p, char **svg, size_t *len) {
    if (!p || !svg) return otc_fail(OTC_ERR_ARG, "plot: NULL argument");
    *svg = NULL;
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    bool any = data_range(p, &x0, &x1, &y0, &y1);
    if (x1 - x0 <= 0 || !isfinite(x1 - x0)) {
        double d = x0 != 0 ? fabs(x0) * 0.1 : 1;
        x0 -= d, x1 += d;
    }
    if (p->log_y) {
        /* whole decades, at least one */
        y0 = floor(y0 + 1e-9);
        y1 = ceil(y1 - 1e-9);
        if (y1 <= y0) y1 = y0 + 1;
    } else {
        if (y1 - y0 <= 0 || !isfinite(y1 - y0)) {
            double d = y0 != 0 ? fabs(y0) * 0.1 : 1;
            y0 -= d, y1 += d;
        }
        /* A little room above and below, then out to whole ticks, so the curve does not run
         * along the frame; a range that starts at zero or above stays so (losses). */
        double pad = (y1 - y0) * 0.04;
        bool non_negative = y0 >= 0;
        y0 -= pad, y1 += pad;
        if (non_negative && y0 < 0) y0 = 0;
        double t[32], step;
        if (otc_plot_nice_ticks(y0, y1, 6, t, 32, &step) > 0 && step > 0) {
            y0 = floor(y0 / step + 1e-9) * step;
            y1 = ceil(y1 / step - 1e-9) * step;
        }
    }
    double W = p->width, H = p->height;
    double left = 72, right = W - 20, top = p->title ? 44 : 20, bottom = H - (p->x_label ? 52 : 34);
    axis ax = {x0, x1, left, right}, ay = {y0, y1, bottom, top};

    otc_text b = {0};
    otc_text_printf(
        &b,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
        "font-size=\"12\">\n"
        "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
        "<defs><clipPath id=\"plot-area\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
        "height=\"%.2f\"/></clipPath></defs>\n",
        p->width, p->height, p->width, p->height, left, top, right - left, bottom - top);
    if (p->title) {
        otc_text_printf(&b,
                        "<text x=\"%.2f\" y=\"26\" text-anchor=\"middle\" font-size=\"16\" "
                        "font-weight=\"bold\">",
                        W / 2);
        otc_text_xml(&b, p->title);
        otc_text_printf(&b, "</text>\n");
    }
    draw_x_axis(&b, &ax, bottom, top);
    draw_y_axis(&b, p, &ay, left, right);
    otc_text_printf(&b,
                    "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" "
                    "stroke=\"#333\"/>\n",
                    left, top, right - left, bottom - top);
    if (p->x_label) {
        otc_text_printf(&b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">",
                        (left + right) / 2, H - 14);
        otc_text_xml(&b, p->x_label);
        otc_text_printf(&b, "</text>\n");
    }
    if (p->y_label) {
        double cy = (top + bottom) / 2;
        otc_text_printf(&b,
                        "<text x=\"18\" y=\"%.2f\" text-anchor=\"middle\" "
                        "transform=\"rotate(-90 18 %.2f)\">",
                        cy, cy);
        otc_text_xml(&b, p->y_label);
        otc_text_printf(&b, "</text>\n");
    }
    otc_text_printf(&b, "<g clip-path=\"url(#plot-area)\">\n");
    for (int i = 0; i < p->n_series; i++)
        draw_series(&b, p, &p->s[i], palette[i % N_PALETTE], &ax, &ay);
    otc_text_printf(&b, "</g>\n");
    if (!any)
        otc_text_printf(&b,
                        "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" fill=\"#888\">no "
                        "data</text>\n",
                        (left + right) / 2, (top + bottom) / 2);
    draw_legend(&b, p, &ax, &ay);
    otc_text_printf(&b, "</svg>\n");
    if (b.failed) {
        free(b.text);
        return otc_fail(OTC_ERR_NOMEM, "plot: out of memory rendering SVG");
    }
    *svg = b.text;
    if (len) *len = b.len;
    return OTC_OK;
}

otc_status otc_plot_save_svg(const otc_plot *p, const char *path) {
    char *svg;
    size_t len;
    otc_status st = otc_plot_svg(p, &svg, &len);
    if (st != OTC_OK) return otc_fail_context(st, "%s", path ? path : "(null)");
    st = otc_write_file_atomic(path, svg, len);
    free(svg);
    return st;
}
