/* Run statistics as files: one CSV row per generation, and the best/mean fitness per
 * generation as an SVG line plot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/file.h"
#include "otc/plot.h"

otc_status otc_neat_stats_save_csv(const otc_neat_population *p, const char *path) {
    if (!p || !path) return otc_fail(OTC_ERR_ARG, "otc_neat_stats_save_csv: NULL argument");
    size_t cap = 256 + (size_t)p->n_stats * 320, len = 0;
    char *buf = malloc(cap);
    if (!buf) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", path);
    len += (size_t)snprintf(buf, cap,
                            "generation,evaluations,best_fitness,mean_fitness,stdev_fitness,"
                            "species,threshold,mean_hidden,mean_connections,champion_hidden,"
                            "champion_connections,confirm_score,seconds\n");
    for (int i = 0; i < p->n_stats; i++) {
        const otc_neat_gen_stats *s = &p->stats[i];
        len += (size_t)snprintf(
            buf + len, cap - len, "%d,%ld,%.9g,%.9g,%.9g,%d,%.6g,%.4f,%.4f,%d,%d,%.9g,%.6f\n",
            s->generation, s->evaluations, s->best_fitness, s->mean_fitness, s->stdev_fitness,
            s->n_species, s->threshold, s->mean_hidden, s->mean_connections, s->champion_hidden,
            s->champion_connections, s->confirm_score, s->seconds);
    }
    otc_status st = otc_write_file_atomic(path, buf, len);
    free(buf);
    return st;
}

otc_status otc_neat_stats_save_svg(const otc_neat_population *p, const char *title,
                                   const char *path) {
    if (!p || !path) return otc_fail(OTC_ERR_ARG, "otc_neat_stats_save_svg: NULL argument");
    otc_plot *plot = otc_plot_new(title ? title : "NEAT fitness", "generation", "fitness");
    if (!plot) return OTC_ERR_NOMEM;
    int best = otc_plot_series(plot, "best"), mean = otc_plot_series(plot, "mean");
    otc_status s = best >= 0 && mean >= 0 ? OTC_OK : OTC_ERR_NOMEM;
    for (int i = 0; i < p->n_stats && s == OTC_OK; i++) {
        s = otc_plot_point(plot, best, p->stats[i].generation, p->stats[i].best_fitness);
        if (s == OTC_OK)
            s = otc_plot_point(plot, mean, p->stats[i].generation, p->stats[i].mean_fitness);
    }
    if (s == OTC_OK) s = otc_plot_save_svg(plot, path);
    otc_plot_free(plot);
    return s;
}
