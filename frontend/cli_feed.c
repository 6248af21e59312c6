/* Matching a dataset to a model: which Input the rows feed and how wide outputs are, with
 * errors that say which file and which columns do not fit. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int otc_cli_row_width(const otc_graph *g, otc_id id) {
    const otc_node *n = otc_graph_node(g, id);
    if (!n || !otc_shape_is_batched(n->shape)) return -1;
    size_t k = otc_shape_size(n->shape);
    return k > (size_t)1 << 30 ? -1 : (int)k;
}

/* "a, b, c" from the dataset's feature names, cut to fit. */
static const char *feature_list(const otc_dataset *d, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < d->n_features && o + 8 < len; i++) {
        char name[64];
        otc_cli_printable(d->feature_names ? d->feature_names[i] : "?", name, sizeof name);
        int n = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", name);
        if (n < 0 || (size_t)n >= len - o) {
            snprintf(buf + o, len - o, ", ...");
            break;
        }
        o += (size_t)n;
    }
    return buf;
}

int otc_cli_data_input(const char *cmd, const otc_graph *g, const char *model_path,
                       const char *data_path, const otc_dataset *d, otc_id *input) {
    char sm[512], sd[512], name[128], shape[64], cols[512];
    otc_cli_printable(model_path, sm, sizeof sm);
    otc_cli_printable(data_path, sd, sizeof sd);
    int n = otc_graph_input_count(g);
    if (n == 0) return otc_cli_error(cmd, "%s: the model has no Input node to feed", sm);
    if (n > 1) {
        char second[128];
        return otc_cli_error(
            cmd,
            "%s: the model has %d inputs ('%s', '%s', ...); otc %s feeds "
            "models with one input",
            sm, n,
            otc_cli_printable(otc_graph_node(g, otc_graph_input(g, 0))->name, name, sizeof name),
            otc_cli_printable(otc_graph_node(g, otc_graph_input(g, 1))->name, second,
                              sizeof second),
            cmd);
    }
    otc_id in = otc_graph_input(g, 0);
    const otc_node *nd = otc_graph_node(g, in);
    otc_cli_printable(nd->name ? nd->name : "#0", name, sizeof name);
    otc_shape_str(nd->shape, shape, sizeof shape);
    int width = otc_cli_row_width(g, in);
    if (width < 0)
        return otc_cli_error(cmd,
                             "%s: input '%s' %s has no batch dimension, so rows cannot "
                             "feed it",
                             sm, name, shape);
    if (width != d->n_features)
        return otc_cli_error(cmd,
                             "%s has %d feature column%s (%s) but input '%s' of %s takes %d "
                             "values per row (choose columns with --features%s)",
                             sd, d->n_features, d->n_features == 1 ? "" : "s",
                             feature_list(d, cols, sizeof cols), name, sm, width,
                             strcmp(cmd, "run") ? " and --target" : " or --drop");
    *input = in;
    return 0;
}
