/* A run's Pareto front as files: each member as a model, a CSV of their objectives, and an SVG
 * of fitness against the front's cost axis; and the member a budget or the knee chooses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/file.h"
#include "otc/model.h"
#include "otc/plot.h"

int otc_neat_front_choose(const otc_neat_population *p, int max_connections, double max_cost) {
    int n = otc_neat_front_size(p);
    if (max_connections < 0 && !(max_cost >= 0)) return otc_neat_front_knee(p);
    int best = -1;
    for (int i = 0; i < n; i++) {
        const otc_neat_genome *g = otc_neat_front_genome(p, i);
        if (max_connections >= 0 &&
            otc_neat_objective_value(OTC_NEAT_OBJ_CONNECTIONS, g) > max_connections)
            continue;
        if (max_cost >= 0 && otc_neat_objective_value(OTC_NEAT_OBJ_COST, g) > max_cost) continue;
        if (best < 0 || g->fitness > otc_neat_front_genome(p, best)->fitness) best = i;
    }
    return best;
}

otc_status otc_neat_genome_graph_of(const otc_neat_population *p, int i, const otc_neat_task *task,
                                    otc_graph **out) {
    const otc_neat_genome *g = otc_neat_front_genome(p, i);
    if (!g || !out) return otc_fail(OTC_ERR_ARG, "otc_neat_genome_graph_of: no member %d", i);
    return otc_neat_genome_graph(p, g, otc_neat_front_generation(p, i), otc_neat_solved(p), task,
                                 out);
}

/* score[i]: member i's score on the task's confirm test (the csv task's validation accuracy,
 * dpnv's generalisation), what a user weighs against size besides the fitness. */
static otc_status confirm_scores(const otc_neat_population *p, const otc_neat_task *task,
                                 double *score) {
    for (int i = 0; i < otc_neat_front_size(p); i++) {
        bool solved = false;
        otc_status s =
            otc_neat_confirm(task, &p->config, otc_neat_front_genome(p, i), 1, &solved, &score[i]);
        if (s != OTC_OK) return s;
    }
    return OTC_OK;
}

/* score: NULL, or each member's confirm score, written as a column named score_name. */
static otc_status save_csv(const otc_neat_population *p, const double *score,
                           const char *score_name, const char *path) {
    int n = otc_neat_front_size(p);
    size_t cap = 192 + (size_t)n * 192, len = 0;
    char *buf = malloc(cap);
    if (!buf) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", path);
    len += (size_t)snprintf(buf, cap,
                            "member,file,generation,fitness,connections,nodes,"
                            "parameters,cost%s%.64s\n",
                            score ? "," : "", score ? score_name : "");
    for (int i = 0; i < n; i++) {
        const otc_neat_genome *g = otc_neat_front_genome(p, i);
        len +=
            (size_t)snprintf(buf + len, cap - len, "%d,member-%d.otm,%d,%.9g,%.0f,%.0f,%.0f,%.0f",
                             i, i, otc_neat_front_generation(p, i), g->fitness,
                             otc_neat_objective_value(OTC_NEAT_OBJ_CONNECTIONS, g),
                             otc_neat_objective_value(OTC_NEAT_OBJ_NODES, g),
                             otc_neat_objective_value(OTC_NEAT_OBJ_PARAMETERS, g),
                             otc_neat_objective_value(OTC_NEAT_OBJ_COST, g));
        if (score) len += (size_t)snprintf(buf + len, cap - len, ",%.9g", score[i]);
        len += (size_t)snprintf(buf + len, cap - len, "\n");
    }
    otc_status s = otc_write_file_atomic(path, buf, len);
    free(buf);
    return s;
}

/* accuracy: NULL, or each member's validation accuracy, drawn beside the fitness (both in
 * [0, 1] on the csv task, whose fitness is 1 / (1 + MSE)). */
static otc_status save_svg(const otc_neat_population *p, const char *task, const double *accuracy,
                           const char *path) {
    const otc_neat_config *c = &p->config;
    int first = otc_neat_first_cost(c);
    otc_neat_objective x = first >= 0 ? c->objectives[first] : OTC_NEAT_OBJ_CONNECTIONS;
    char title[160];
    snprintf(title, sizeof title, "NEAT %s: Pareto front", task);
    otc_plot *plot = otc_plot_new(title, otc_neat_objective_name(x),
                                  accuracy ? "fitness, validation accuracy" : "fitness");
    if (!plot) return OTC_ERR_NOMEM;
    int front = otc_plot_series(plot, "front"), knee = otc_plot_series(plot, "knee");
    otc_status s = front >= 0 && knee >= 0 ? OTC_OK : OTC_ERR_NOMEM;
    /* A step line: a member holds its fitness until the next one, costlier, beats it. */
    int n = otc_neat_front_size(p), k = otc_neat_front_knee(p);
    for (int i = 0; i < n && s == OTC_OK; i++) {
        const otc_neat_genome *g = otc_neat_front_genome(p, i);
        double cx = otc_neat_objective_of(c, x, g);
        if (i > 0) s = otc_plot_point(plot, front, cx, otc_neat_front_genome(p, i - 1)->fitness);
        if (s == OTC_OK) s = otc_plot_point(plot, front, cx, g->fitness);
    }
    if (s == OTC_OK && k >= 0) { /* the knee as a short vertical mark */
        const otc_neat_genome *g = otc_neat_front_genome(p, k);
        double cx = otc_neat_objective_of(c, x, g);
        s = otc_plot_point(plot, knee, cx, otc_neat_front_genome(p, 0)->fitness);
        if (s == OTC_OK) s = otc_plot_point(plot, knee, cx, g->fitness);
    }
    int acc = accuracy ? otc_plot_series(plot, "val_accuracy") : -1;
    if (accuracy && acc < 0) s = OTC_ERR_NOMEM;
    for (int i = 0; accuracy && i < n && s == OTC_OK; i++)
        s = otc_plot_point(plot, acc, otc_neat_objective_of(c, x, otc_neat_front_genome(p, i)),
                           accuracy[i]);
    if (s == OTC_OK) s = otc_plot_save_svg(plot, path);
    otc_plot_free(plot);
    return s;
}

otc_status otc_neat_front_save(const otc_neat_population *p, const otc_neat_task *task,
                               const char *dir) {
    if (!p || !dir) return otc_fail(OTC_ERR_ARG, "otc_neat_front_save: NULL argument");
    char path[4096];
    int n = otc_neat_front_size(p);
    for (int i = 0; i < n; i++) {
        if (snprintf(path, sizeof path, "%s/member-%d.otm", dir, i) >= (int)sizeof path)
            return otc_fail(OTC_ERR_ARG, "%s: directory name too long", dir);
        otc_graph *g = NULL;
        otc_status s =
            otc_neat_genome_graph(p, otc_neat_front_genome(p, i), otc_neat_front_generation(p, i),
                                  otc_neat_solved(p), task, &g);
        if (s == OTC_OK) s = otc_model_save(g, path);
        otc_graph_free(g);
        if (s != OTC_OK) return s;
    }
    const char *score_name = task && task->confirm && task->score_name ? task->score_name : NULL;
    double *score = score_name ? malloc(sizeof *score * (size_t)(n + 1)) : NULL;
    if (score_name && !score) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", dir);
    otc_status s = score ? confirm_scores(p, task, score) : OTC_OK;
    snprintf(path, sizeof path, "%s/front.csv", dir);
    if (s == OTC_OK) s = save_csv(p, score, score_name, path);
    snprintf(path, sizeof path, "%s/front.svg", dir);
    bool accuracy = score_name && !strcmp(score_name, "val_accuracy");
    if (s == OTC_OK) s = save_svg(p, task ? task->name : "", accuracy ? score : NULL, path);
    free(score);
    return s;
}
