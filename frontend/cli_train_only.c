/* --train-only PREFIXES (otc train, otc compile --train): the parameters a training run
 * updates, by name prefix; every other parameter is frozen for the run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "otc/graph.h"
#include "otc/text.h"

/* Does name start with one of the prefixes? */
static bool wanted(char *const *prefix, int n, const char *name) {
    for (int i = 0; name && i < n; i++)
        if (!strncmp(name, prefix[i], strlen(prefix[i]))) return true;
    return false;
}

int otc_cli_train_only(const char *cmd, const char *model, otc_graph *g, const char *spec,
                       bool *frozen) {
    if (!spec) return 0;
    char sm[512], sp[512];
    otc_cli_printable(model, sm, sizeof sm);
    /* the prefixes, split once (an empty one, "fc.,", is an error, not a prefix skipped) */
    size_t len = strlen(spec);
    int max = (int)(len / 2 + 1), n = 0;
    char *buf = malloc(len + 1), **prefix = malloc((size_t)max * sizeof *prefix);
    int rc = 0;
    if (!buf || !prefix) {
        rc = otc_cli_error(cmd, "out of memory");
        goto done;
    }
    memcpy(buf, spec, len + 1);
    if (strspn(spec, ", \t") == len) {
        rc = otc_cli_error(cmd, "--train-only needs a parameter name prefix (e.g. fc.)");
        goto done;
    }
    if (otc_list_split(buf, false, prefix, max, &n) != OTC_OK) {
        rc = otc_cli_error(cmd, "--train-only: bad list '%s': %s",
                           otc_cli_printable(spec, sp, sizeof sp), otc_last_error());
        goto done;
    }
    /* every prefix must name a trainable parameter (a typo would freeze the whole model) */
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (otc_id id = 0; !found && id < otc_graph_size(g); id++) {
            const otc_node *nd = otc_graph_node(g, id);
            found = nd->op == OTC_OP_PARAMETER && nd->trainable && wanted(&prefix[i], 1, nd->name);
        }
        if (!found) {
            char names[300] = "", lab[64];
            size_t used = 0;
            for (otc_id id = 0; id < otc_graph_size(g) && used + 70 < sizeof names; id++) {
                const otc_node *nd = otc_graph_node(g, id);
                if (nd->op != OTC_OP_PARAMETER || !nd->trainable) continue;
                used +=
                    (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                                     otc_graph_node_label(g, id, lab, sizeof lab));
            }
            rc = otc_cli_error(cmd,
                               "--train-only: no trainable parameter of %s starts with '%.200s' "
                               "(its parameters: %s)",
                               sm, otc_cli_printable(prefix[i], sp, sizeof sp),
                               names[0] ? names : "none");
            goto done;
        }
    }
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        const otc_node *nd = otc_graph_node(g, id);
        bool freeze = nd->op == OTC_OP_PARAMETER && nd->trainable && !wanted(prefix, n, nd->name);
        if (freeze && otc_graph_set_trainable(g, id, false)) {
            rc = otc_cli_error(cmd, "%s: %s", sm, otc_last_error());
            goto done;
        }
        if (frozen) frozen[id] = freeze;
    }
done:
    free(buf);
    free(prefix);
    return rc;
}
