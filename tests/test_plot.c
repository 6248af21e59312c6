/* Tests for the SVG line-plot writer: tick choice, coordinates, gaps, log axes, escaping,
 * well-formedness and atomic saving. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "otc/plot.h"

/* An independent well-formedness check: every element opened is closed in order, every
 * attribute value is quoted, and no raw '&' or '<' appears in text. */
static bool xml_balanced(const char *s) {
    const char *stack[256];
    size_t lens[256];
    int depth = 0;
    while (*s) {
        if (*s == '&') {
            const char *semi = strchr(s, ';');
            if (!semi || semi - s > 8) return false;
            s = semi + 1;
            continue;
        }
        if (*s != '<') {
            s++;
            continue;
        }
        if (s[1] == '?') {
            s = strstr(s, "?>");
            if (!s) return false;
            s += 2;
            continue;
        }
        bool closing = s[1] == '/';
        const char *name = s + (closing ? 2 : 1);
        size_t n = strcspn(name, " \t\n/>");
        if (n == 0) return false;
        const char *q = name + n;
        bool in_quote = false;
        while (*q && (in_quote || *q != '>')) {
            if (*q == '"') in_quote = !in_quote;
            if (!in_quote && *q == '<') return false;
            q++;
        }
        if (!*q) return false;
        bool self_closing = q[-1] == '/';
        if (closing) {
            if (depth == 0 || lens[depth - 1] != n || strncmp(stack[depth - 1], name, n))
                return false;
            depth--;
        } else if (!self_closing) {
            if (depth == 256) return false;
            stack[depth] = name;
            lens[depth++] = n;
        }
        s = q + 1;
    }
    return depth == 0;
}

static int count_of(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

TEST(plot_nice_ticks) {
    double t[32], step;
    int n = otc_plot_nice_ticks(0, 1, 5, t, 32, &step);
    CHECK(n == 6);
    CHECK_NEAR(step, 0.2, 1e-12);
    CHECK_NEAR(t[0], 0, 1e-12);
    CHECK_NEAR(t[5], 1, 1e-12);
    /* raw step 0.148 rounds to 0.1: ticks 0.2 .. 0.8 */
    n = otc_plot_nice_ticks(0.13, 0.87, 5, t, 32, &step);
    CHECK(n == 7);
    CHECK_NEAR(step, 0.1, 1e-12);
    CHECK_NEAR(t[0], 0.2, 1e-12);
    CHECK_NEAR(t[6], 0.8, 1e-12);
    /* raw 2 -> step 2; zero is exactly zero, not -0 */
    n = otc_plot_nice_ticks(-3, 7, 5, t, 32, &step);
    CHECK(n == 5);
    CHECK_NEAR(step, 2, 1e-12);
    CHECK_NEAR(t[0], -2, 1e-12);
    CHECK(t[1] == 0 && !signbit(t[1]));
    /* raw 250 -> 200 (norm 2.5 < 3) */
    n = otc_plot_nice_ticks(0, 1000, 4, t, 32, &step);
    CHECK_NEAR(step, 200, 1e-9);
    CHECK(n == 6);
    CHECK(otc_plot_nice_ticks(3, 3, 5, t, 32, &step) == 1 && t[0] == 3);
    CHECK(otc_plot_nice_ticks(NAN, 3, 5, t, 32, &step) == 0);
    CHECK(otc_plot_nice_ticks(5, 3, 5, t, 32, &step) == 0);
    CHECK(otc_plot_nice_ticks(0, 1, 5, t, 3, &step) == 3); /* bounded by max */
}

TEST(plot_svg_coordinates) {
    otc_plot *p = otc_plot_new(NULL, NULL, NULL);
    REQUIRE(p);
    float x[2] = {0, 10}, y[2] = {0, 1};
    CHECK(otc_plot_add_series(p, "loss", 2, x, y) == 0);
    char *svg = NULL;
    size_t len = 0;
    REQUIRE(otc_plot_svg(p, &svg, &len) == OTC_OK);
    CHECK(len == strlen(svg));
    /* 720x440 canvas, no title or x label: plot area x 72..700, y 20..406. The y range 0..1
     * gets 4% room (0 stays the bottom: no negative room for data >= 0), 1.04 rounds out to
     * the tick 1.2, so (0,0) is the bottom-left corner and (10,1) is at
     * y = 406 - 386 / 1.2 = 84.33. */
    CHECK_MSG(strstr(svg, "d=\"M72.00 406.00 L700.00 84.33 \""), "%s", svg);
    CHECK(strstr(svg, "width=\"720\" height=\"440\""));
    CHECK(strstr(svg, ">loss</text>")); /* legend */
    /* the line stays clear of the top right corner: the legend goes there (700 - 62 - 8) */
    CHECK(strstr(svg, "<g class=\"legend\">\n<rect x=\"630.00\" y=\"28.00\""));
    CHECK(xml_balanced(svg));
    free(svg);
    otc_plot_free(p);
}

TEST(plot_legend_avoids_the_data) {
    /* up to 1.15: the range rounds out to 1.2 and the line ends at y = 406 - 386 * 1.15/1.2
     * = 36.1, inside a top-right legend (y 28..54): the legend moves to the top left */
    otc_plot *p = otc_plot_new(NULL, NULL, NULL);
    REQUIRE(p);
    float x[2] = {0, 10}, y[2] = {0, 1.15f};
    CHECK(otc_plot_add_series(p, "fitness", 2, x, y) == 0);
    char *svg = NULL;
    REQUIRE(otc_plot_svg(p, &svg, NULL) == OTC_OK);
    CHECK_MSG(strstr(svg, "<g class=\"legend\">\n<rect x=\"80.00\" y=\"28.00\""), "%s", svg);
    free(svg);
    /* a falling curve fills the top left instead: back to the top right */
    otc_plot_free(p);
    p = otc_plot_new(NULL, NULL, NULL);
    REQUIRE(p);
    float yd[2] = {1.15f, 0};
    CHECK(otc_plot_add_series(p, "loss", 2, x, yd) == 0);
    REQUIRE(otc_plot_svg(p, &svg, NULL) == OTC_OK);
    CHECK(strstr(svg, "<g class=\"legend\">\n<rect x=\"630.00\" y=\"28.00\""));
    free(svg);
    otc_plot_free(p);
}

TEST(plot_svg_series_and_escaping) {
    otc_plot *p = otc_plot_new("Loss <train & val>", "epoch", "loss");
    REQUIRE(p);
    int a = otc_plot_series(p, "train");
    int b = otc_plot_series(p, "val \"x\" \xff\x01");
    REQUIRE(a == 0 && b == 1);
    for (int i = 1; i <= 20; i++) {
        CHECK(otc_plot_point(p, a, i, 1.0 / i) == OTC_OK);
        CHECK(otc_plot_point(p, b, i, 1.2 / i) == OTC_OK);
    }
    CHECK(otc_plot_point(p, 2, 0, 0) != OTC_OK); /* no such series */
    char *svg = NULL;
    REQUIRE(otc_plot_svg(p, &svg, NULL) == OTC_OK);
    CHECK(strstr(svg, "Loss &lt;train &amp; val&gt;"));
    CHECK(strstr(svg, "val &quot;x&quot; ??")); /* bad UTF-8 and a control byte replaced */
    CHECK(count_of(svg, "<path ") == 2);
    CHECK(strstr(svg, "#1f77b4") && strstr(svg, "#ff7f0e")); /* two palette colours */
    CHECK(strstr(svg, ">epoch</text>") && strstr(svg, ">loss</text>"));
    CHECK(count_of(svg, "<circle") == 40); /* 20 points each: markers shown */
    CHECK(xml_balanced(svg));
    free(svg);
    otc_plot_free(p);
}

TEST(plot_gaps_break_the_line) {
    otc_plot *p = otc_plot_new("gaps", NULL, NULL);
    REQUIRE(p);
    int s = otc_plot_series(p, NULL);
    double ys[] = {1, 2, NAN, 3, 4, INFINITY, 5};
    for (int i = 0; i < 7; i++) CHECK(otc_plot_point(p, s, i, ys[i]) == OTC_OK);
    char *svg = NULL;
    REQUIRE(otc_plot_svg(p, &svg, NULL) == OTC_OK);
    const char *d = strstr(svg, " d=\"");
    REQUIRE(d);
    char path[512];
    size_t n = strcspn(d + 4, "\"");
    REQUIRE(n < sizeof path);
    memcpy(path, d + 4, n);
    path[n] = '\0';
    CHECK_MSG(count_of(path, "M") == 3, "%s", path); /* three runs: {1,2} {3,4} {5} */
    CHECK(count_of(path, "L") == 2);
    CHECK(!strstr(svg, "nan") && !strstr(svg, "inf"));
    CHECK(!strstr(svg, "class=\"legend\"")); /* unnamed series: no legend */
    free(svg);
    otc_plot_free(p);
}

TEST(plot_log_axis) {
    otc_plot *p = otc_plot_new(NULL, NULL, NULL);
    REQUIRE(p);
    otc_plot_set_log_y(p, true);
    int s = otc_plot_series(p, "l");
    CHECK(otc_plot_point(p, s, 0, 1.0) == OTC_OK);
    CHECK(otc_plot_point(p, s, 1, 0.0) == OTC_OK); /* left out on a log axis */
    CHECK(otc_plot_point(p, s, 2, 0.01) == OTC_OK);
    char *svg = NULL;
    REQUIRE(otc_plot_svg(p, &svg, NULL) == OTC_OK);
    /* decades 1e-2 .. 1e0 span the plot: 1.0 at the top (y 20), 0.01 at the bottom (406);
     * the zero makes a gap, so both points stand alone. */
    CHECK_MSG(strstr(svg, "M0.00") == NULL, "%s", svg);
    CHECK(strstr(svg, "cx=\"72.00\" cy=\"20.00\""));
    CHECK(strstr(svg, "cx=\"700.00\" cy=\"406.00\""));
    CHECK(strstr(svg, ">0.01</text>") && strstr(svg, ">0.1</text>") && strstr(svg, ">1</text>"));
    CHECK(xml_balanced(svg));
    free(svg);
    otc_plot_free(p);
}

TEST(plot_empty_and_flat) {
    otc_plot *p = otc_plot_new("empty", NULL, NULL);
    REQUIRE(p);
    char *svg = NULL;
    REQUIRE(otc_plot_svg(p, &svg, NULL) == OTC_OK);
    CHECK(strstr(svg, "no data"));
    CHECK(xml_balanced(svg));
    free(svg);
    /* one constant point: the ranges widen around it instead of dividing by zero */
    int s = otc_plot_series(p, "flat");
    CHECK(otc_plot_point(p, s, 5, 2) == OTC_OK);
    REQUIRE(otc_plot_svg(p, &svg, NULL) == OTC_OK);
    CHECK(!strstr(svg, "no data"));
    CHECK(!strstr(svg, "nan") && !strstr(svg, "inf"));
    CHECK(strstr(svg, "<circle"));
    free(svg);
    CHECK(otc_plot_set_size(p, 10, 10) != OTC_OK);
    CHECK(otc_plot_set_size(p, 400, 300) == OTC_OK);
    REQUIRE(otc_plot_svg(p, &svg, NULL) == OTC_OK);
    CHECK(strstr(svg, "width=\"400\" height=\"300\""));
    free(svg);
    otc_plot_free(p);
}

TEST(plot_save_atomic) {
    otc_plot *p = otc_plot_new("saved", "x", "y");
    REQUIRE(p);
    float y[3] = {3, 1, 2};
    CHECK(otc_plot_add_series(p, "s", 3, NULL, y) == 0);
    char path[512];
    snprintf(path, sizeof path, "%s/plot_save_test_%ld.svg", OTC_BINARY_DIR, (long)getpid());
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs("old", f);
    fclose(f);
    REQUIRE(otc_plot_save_svg(p, path) == OTC_OK);
    char *svg = NULL;
    size_t len = 0;
    REQUIRE(otc_plot_svg(p, &svg, &len) == OTC_OK);
    f = fopen(path, "rb");
    REQUIRE(f);
    char *back = malloc(len + 1);
    size_t got = fread(back, 1, len + 1, f);
    fclose(f);
    CHECK(got == len && !memcmp(back, svg, len));
    free(back);
    free(svg);
    /* A directory where the file should go: the save fails, names the path, and leaves no
     * temporary behind. */
    char dir[600];
    snprintf(dir, sizeof dir, "%s.d", path);
    REQUIRE(mkdir(dir, 0755) == 0);
    CHECK(otc_plot_save_svg(p, dir) != OTC_OK);
    CHECK(strstr(otc_last_error(), dir) != NULL);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    char bad[700];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.svg", OTC_BINARY_DIR);
    CHECK(otc_plot_save_svg(p, bad) == OTC_ERR_IO);
    CHECK(strstr(otc_last_error(), bad) != NULL);
    rmdir(dir);
    unlink(path);
    otc_plot_free(p);
}
