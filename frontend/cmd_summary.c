/* `otc summary MODEL.otm`: the node table (name, op, shape, parameters), totals, inputs and
 * outputs, and the facts stored in the model's metadata (NEAT genome, training run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "otc/otc.h"

const char otc_cmd_summary_summary[] = "show a model's nodes, parameters and metadata";

static const char *cell_name(const otc_graph *g, otc_id id, char *buf, size_t len) {
    const otc_node *n = otc_graph_node(g, id);
    if (n->name && *n->name) return otc_cli_printable(n->name, buf, len);
    snprintf(buf, len, "#%d", (int)id);
    return buf;
}

/* Cut a cell to width with a trailing '~', so one long name cannot wreck the table. */
static const char *fit(const char *s, int width, char *buf, size_t len) {
    if ((int)strlen(s) <= width) return s;
    snprintf(buf, len, "%.*s~", width - 1, s);
    return buf;
}

static bool is_param(const otc_graph *g, otc_id id) {
    const otc_node *n = otc_graph_node(g, id);
    return n && n->op == OTC_OP_PARAMETER;
}

static size_t param_elems(const otc_graph *g, otc_id id) {
    return otc_shape_size(otc_graph_node(g, id)->shape);
}

static void print_value(const cJSON *v) {
    char buf[200];
    if (cJSON_IsBool(v)) {
        printf("%s", cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (isfinite(d) && d == floor(d) && fabs(d) < 1e15)
            printf("%.0f", d);
        else
            printf("%.6g", d);
    } else if (cJSON_IsString(v) && v->valuestring) {
        printf("%s", otc_cli_printable(v->valuestring, buf, 80));
    } else if (cJSON_IsArray(v)) {
        /* short arrays of plain values inline, the rest as a count */
        char line[80] = "";
        size_t o = 0;
        bool inline_ok = true;
        const cJSON *e;
        cJSON_ArrayForEach(e, v) {
            char cell[48];
            if (cJSON_IsString(e) && e->valuestring)
                otc_cli_printable(e->valuestring, cell, sizeof cell);
            else if (cJSON_IsNumber(e))
                snprintf(cell, sizeof cell, "%.6g", e->valuedouble);
            else
                inline_ok = false;
            if (!inline_ok) break;
            int n = snprintf(line + o, sizeof line - o, "%s%s", o ? ", " : "", cell);
            if (n < 0 || (size_t)n >= sizeof line - o) {
                inline_ok = false;
                break;
            }
            o += (size_t)n;
        }
        if (inline_ok)
            printf("[%s]", line);
        else
            printf("[%d items]", cJSON_GetArraySize(v));
    } else if (cJSON_IsObject(v)) {
        printf("{%d fields}", cJSON_GetArraySize(v));
    } else {
        printf("null");
    }
}

/* One line per field; fields named in `first` come first, in that order, with '_' shown as
 * a space. The JSON comes from a file: anything unexpected is shown, never trusted. */
static void print_fields(const char *title, const char *json, const char *const *first) {
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(root)) {
        printf("%s: (not a JSON object)\n", title);
        cJSON_Delete(root);
        return;
    }
    printf("%s\n", title);
    const cJSON *f;
    bool shown[256] = {false};
    for (int k = 0; first && first[k]; k++) {
        int i = 0;
        cJSON_ArrayForEach(f, root) {
            if (i < 256 && !shown[i] && f->string && !strcmp(f->string, first[k])) {
                shown[i] = true;
                char label[40];
                otc_cli_printable(f->string, label, sizeof label);
                for (char *c = label; *c; c++)
                    if (*c == '_') *c = ' ';
                printf("  %-22s ", label);
                print_value(f);
                putchar('\n');
            }
            i++;
        }
    }
    int i = 0, extra = 0;
    cJSON_ArrayForEach(f, root) {
        if (i >= 256) {
            extra++;
        } else if (!shown[i]) {
            char label[40];
            otc_cli_printable(f->string ? f->string : "?", label, sizeof label);
            for (char *c = label; *c; c++)
                if (*c == '_') *c = ' ';
            printf("  %-22s ", label);
            print_value(f);
            putchar('\n');
        }
        i++;
    }
    if (extra) printf("  (%d more fields)\n", extra);
    cJSON_Delete(root);
}

/* Facts read off the graph itself, so they hold whatever the metadata says. A neuron
 * without sources is a constant (NEAT's bias node), neither hidden nor an output. */
static void print_network_facts(const otc_graph *g) {
    int n = otc_graph_size(g), neurons = 0, hidden = 0, constant = 0, conns = 0, zero = 0;
    for (otc_id id = 0; id < n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op != OTC_OP_NEURON) continue;
        neurons++;
        int k = nd->n_inputs - 2;
        bool out = false;
        for (int i = 0; i < otc_graph_output_count(g); i++) out |= otc_graph_output(g, i) == id;
        if (k == 0 && !out)
            constant++;
        else if (!out)
            hidden++;
        conns += k;
        const otc_node *w = otc_graph_node(g, nd->inputs[0]);
        if (w && w->value)
            for (size_t j = 0; j < w->value->size && j < (size_t)k; j++)
                zero += w->value->data[j] == 0.0f;
    }
    if (!neurons) return;
    printf("neurons  %d (%d hidden", neurons, hidden);
    if (constant) printf(", %d constant", constant);
    printf("), %d connections", conns);
    if (zero) printf(" (%d with weight 0)", zero);
    putchar('\n');
}

static void print_io(const otc_graph *g, const char *title, int count, bool outputs) {
    printf("%-8s ", title);
    if (count == 0) printf("(none)");
    for (int i = 0; i < count; i++) {
        otc_id id = outputs ? otc_graph_output(g, i) : otc_graph_input(g, i);
        char name[128], shape[64];
        printf("%s%s %s", i ? ", " : "", cell_name(g, id, name, sizeof name),
               otc_shape_str(otc_graph_node(g, id)->shape, shape, sizeof shape));
    }
    putchar('\n');
}

int otc_cmd_summary(int argc, char **argv) {
    bool all = false;
    const otc_opt opts[] = {
        {"--all", OTC_OPT_FLAG, &all, "list Parameter nodes as rows too"},
    };
    const char *pos[1];
    int rc = otc_cli_parse("summary", "MODEL.otm [--all]", opts, 1, argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    otc_graph *g;
    if ((rc = otc_cli_load_model("summary", pos[0], &g))) return rc;

    int n = otc_graph_size(g);
    /* column widths from the content, within limits */
    int wname = 4, wop = 2, wshape = 5;
    for (otc_id id = 0; id < n; id++) {
        if (!all && is_param(g, id)) continue;
        char buf[128], shape[64];
        int l = (int)strlen(cell_name(g, id, buf, sizeof buf));
        if (l > wname) wname = l;
        l = (int)strlen(otc_op_get(otc_graph_node(g, id)->op)->name);
        if (l > wop) wop = l;
        l = (int)strlen(otc_shape_str(otc_graph_node(g, id)->shape, shape, sizeof shape));
        if (l > wshape) wshape = l;
    }
    if (wname > 28) wname = 28;

    char spath[512];
    struct stat st;
    printf("model    %s", otc_cli_printable(pos[0], spath, sizeof spath));
    if (stat(pos[0], &st) == 0) printf(" (%lld bytes)", (long long)st.st_size);
    printf("\n\n%5s  %-*s  %-*s  %-*s  %8s  %s\n", "id", wname, "name", wop, "op", wshape, "shape",
           "params", "parameters used");
    size_t total = 0, trainable = 0;
    int tensors = 0;
    for (otc_id id = 0; id < n; id++) {
        const otc_node *nd = otc_graph_node(g, id);
        if (nd->op == OTC_OP_PARAMETER) {
            tensors++;
            total += param_elems(g, id);
            if (nd->trainable) trainable += param_elems(g, id);
            if (!all) continue;
        }
        char name[128], cut[64], shape[64], used[256] = "";
        size_t params = nd->op == OTC_OP_PARAMETER ? param_elems(g, id) : 0;
        size_t ul = 0;
        for (int j = 0; j < nd->n_inputs; j++) {
            otc_id p = nd->inputs[j];
            if (!is_param(g, p)) continue;
            bool seen = false; /* a parameter read twice counts once */
            for (int k = 0; k < j; k++) seen |= nd->inputs[k] == p;
            if (seen) continue;
            params += param_elems(g, p);
            if (nd->op == OTC_OP_NEURON) continue; /* its own w and b */
            char pn[128];
            if (ul + 2 < sizeof used)
                ul += (size_t)snprintf(used + ul, sizeof used - ul, "%s%s", ul ? ", " : "",
                                       cell_name(g, p, pn, sizeof pn));
            if (ul >= sizeof used) ul = sizeof used - 1;
        }
        char pbuf[32], win[96];
        /* a convolution's or pool's window after its parameters */
        if (*otc_window_str(nd, win, sizeof win) && ul + 2 < sizeof used)
            snprintf(used + ul, sizeof used - ul, "%s%s", ul ? "; " : "", win);
        if (nd->op == OTC_OP_NEURON) {
            const otc_act_info *act = otc_act_get((otc_act)nd->act);
            snprintf(used, sizeof used, "%s, %d inputs%s%s", act ? act->name : "?",
                     nd->n_inputs - 2, nd->agg != OTC_AGG_SUM ? ", " : "",
                     nd->agg != OTC_AGG_SUM && otc_agg_name(nd->agg) ? otc_agg_name(nd->agg) : "");
        }
        if (params)
            snprintf(pbuf, sizeof pbuf, "%zu", params);
        else
            snprintf(pbuf, sizeof pbuf, "-");
        printf("%5d  %-*s  %-*s  %-*s  %8s%s%s\n", (int)id, wname,
               fit(cell_name(g, id, name, sizeof name), wname, cut, sizeof cut), wop,
               otc_op_get(nd->op)->name, wshape, otc_shape_str(nd->shape, shape, sizeof shape),
               pbuf, *used ? "  " : "", used);
    }
    putchar('\n');
    print_io(g, "inputs", otc_graph_input_count(g), false);
    print_io(g, "outputs", otc_graph_output_count(g), true);
    printf("nodes    %d (%d parameter tensors%s)\n", n, tensors,
           all ? "" : ", counted in the rows that use them");
    printf("params   %zu (%zu trainable), %zu bytes as f32\n", total, trainable,
           total * sizeof(float));
    print_network_facts(g);

    static const char *const neat_first[] = {"task",
                                             "generation",
                                             "fitness",
                                             "species",
                                             "hidden_nodes",
                                             "enabled_connections",
                                             "disabled_connections",
                                             "solved",
                                             NULL};
    static const char *const train_first[] = {"data",     "epochs",       "optimizer",
                                              "lr",       "loss",         "train_loss",
                                              "val_loss", "val_accuracy", NULL};
    /* the genome facts first: for an evolved model they are what a reader looks for */
    if (otc_graph_meta_get(g, "neat")) {
        putchar('\n');
        print_fields("genome (NEAT)", otc_graph_meta_get(g, "neat"), neat_first);
    }
    for (int i = 0; i < otc_graph_meta_count(g); i++) {
        const char *key = otc_graph_meta_key(g, i);
        if (!strcmp(key, "neat")) continue;
        char title[96], skey[64];
        otc_cli_printable(key, skey, sizeof skey);
        putchar('\n');
        snprintf(title, sizeof title, "metadata \"%s\"", skey);
        print_fields(title, otc_graph_meta_get(g, key), !strcmp(key, "train") ? train_first : NULL);
    }
    otc_graph_free(g);
    return OTC_EXIT_OK;
}
