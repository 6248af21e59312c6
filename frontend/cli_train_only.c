/* --train-only PREFIXES (otc train, otc compile --train): the parameters a training run
 * updates, by name prefix; every other parameter is frozen for the run. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "otc/graph.h"

/* Does name start with one of the comma-separated prefixes of spec? */
static bool wanted(const char *spec, const char *name) {
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ",");
        if (n && name && !strncmp(name, p, n)) return true;
        p += n + (p[n] == ',');
    }
    return false;
}

int otc_cli_train_only(const char *cmd, const char *model, otc_graph *g, const char *spec,
                       bool *frozen) {
    if (!spec) return 0;
    char sm[512], sp[512];
    otc_cli_printable(model, sm, sizeof sm);
    if (!*spec || strspn(spec, ",") == strlen(spec))
        return otc_cli_error(cmd, "--train-only needs a parameter name prefix (e.g. fc.)");
    /* every prefix must name a trainable parameter (a typo would freeze the whole model) */
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ",");
        bool found = false;
        for (otc_id id = 0; n && !found && id < otc_graph_size(g); id++) {
            const otc_node *nd = otc_graph_node(g, id);
            found =
                nd->op == OTC_OP_PARAMETER && nd->trainable && nd->name && !strncmp(nd->name, p, n);
        }
        if (n && !found) {
            char names[300] = "", lab[64];
            size_t used = 0;
            for (otc_id id = 0; id < otc_graph_size(g) && used + 70 < sizeof names; id++) {
                const otc_node *nd = otc_graph_node(g, id);
                if (nd->op != OTC_OP_PARAMETER || !nd->trainable) continue;
                used +=
                    (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                                     otc_graph_node_label(g, id, lab, sizeof lab));
            }
            return otc_cli_error(cmd,
                                 "--train-only: no trainable parameter of %s starts with '%.*s' "
                                 "(its parameters: %s)",
                                 sm, (int)(n < 200 ? n : 200), otc_cli_printable(p, sp, sizeof sp),
                                 names[0] ? names : "none");
        }
        p += n + (p[n] == ',');
    }
    for (otc_id id = 0; id < otc_graph_size(g); id++) {
        const otc_node *nd = otc_graph_node(g, id);
        bool freeze = nd->op == OTC_OP_PARAMETER && nd->trainable && !wanted(spec, nd->name);
        if (freeze && otc_graph_set_trainable(g, id, false))
            return otc_cli_error(cmd, "%s: %s", sm, otc_last_error());
        if (frozen) frozen[id] = freeze;
    }
    return 0;
}
