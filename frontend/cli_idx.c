/* `--data idx:DIR`: IDX image data (MNIST-style, otc/data.h) for train and run, in place of a
 * CSV file; train reads DIR's train-* files, run the t10k-* (test) files. */
#include <stdint.h>
#include <string.h>

#include "cli.h"
#include "otc/otc.h"

const char *otc_cli_idx_dir(const char *data) {
    return data && !strncmp(data, OTC_CLI_IDX_PREFIX, strlen(OTC_CLI_IDX_PREFIX))
               ? data + strlen(OTC_CLI_IDX_PREFIX)
               : NULL;
}

int otc_cli_load_idx(const char *cmd, const char *data, const char *split, const otc_graph *g,
                     const char *model_path, otc_dataset **out) {
    *out = NULL;
    const char *dir = otc_cli_idx_dir(data);
    char sd[512], sm[512];
    otc_cli_printable(data, sd, sizeof sd);
    if (!dir || !*dir) return otc_cli_error(cmd, "%s: give the directory after idx: (idx:DIR)", sd);
    /* The images header first: a model that cannot take these images is told before what
     * may be a gigabyte is inflated. */
    otc_idx_info info;
    if (otc_idx_peek_dir(dir, split, &info) != OTC_OK)
        return otc_cli_error(cmd, "%s", otc_last_error());
    /* the one input must take one image per row */
    int in = otc_graph_input_count(g) == 1 ? otc_cli_row_width(g, otc_graph_input(g, 0)) : -2;
    if (in >= 0 && (int64_t)in != (int64_t)info.height * info.width) {
        char shape[64];
        otc_shape_str(otc_graph_node(g, otc_graph_input(g, 0))->shape, shape, sizeof shape);
        return otc_cli_error(cmd,
                             "%s holds %dx%d images (%lld values each), but the input %s of %s "
                             "takes %d values per sample",
                             sd, info.height, info.width, (long long)info.height * info.width,
                             shape, otc_cli_printable(model_path, sm, sizeof sm), in);
    }
    if (otc_idx_load_dir(dir, split, NULL, out, &info) != OTC_OK)
        return otc_cli_error(cmd, "%s", otc_last_error());
    return 0;
}
