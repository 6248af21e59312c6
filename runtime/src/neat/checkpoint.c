/* Checkpoints: the whole population state between generations as JSON (innovations,
 * genomes, species, champion, statistics), written atomically, so a resumed run continues
 * exactly as one that never stopped. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "neat_internal.h"
#include "otc/file.h"

#define CHECKPOINT_FORMAT "otc-neat-checkpoint"
/* 2: records the task and the config (version 1 did not, and is refused) */
#define CHECKPOINT_VERSION 2

static bool add_num(cJSON *o, const char *k, double v) {
    return cJSON_AddNumberToObject(o, k, v) != NULL;
}

/* JSON has no NaN or infinity: those travel as strings. */
static bool add_real(cJSON *o, const char *k, double v) {
    if (isfinite(v)) { /* 17 digits: cJSON's own printing may drop the last bits */
        char text[40];
        snprintf(text, sizeof text, "%.17g", v);
        return cJSON_AddRawToObject(o, k, text) != NULL;
    }
    return cJSON_AddStringToObject(o, k, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf") != NULL;
}

/* An array of finite numbers, each printed so it reads back to the same bits (%.17g for a
 * double, %.9g for a float). */
static cJSON *reals_json(const double *d, const float *f, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        char text[40];
        snprintf(text, sizeof text, d ? "%.17g" : "%.9g", d ? d[i] : (double)f[i]);
        if (!cJSON_AddItemToArray(a, cJSON_CreateRaw(text))) {
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

/* item under key k of o; false (item freed) when it or the addition failed. */
static bool add_item(cJSON *o, const char *k, cJSON *item) {
    if (item && cJSON_AddItemToObject(o, k, item)) return true;
    cJSON_Delete(item);
    return false;
}

/* The novelty archive and its threshold's state (select_novelty.c). */
static cJSON *novelty_json(const otc_neat_novelty_state *st) {
    cJSON *o = cJSON_CreateObject();
    if (o && add_num(o, "dim", st->dim) && add_real(o, "threshold", st->threshold) &&
        add_real(o, "floor", st->floor) && add_num(o, "quiet", (double)st->quiet) &&
        add_item(o, "archive", reals_json(NULL, st->archive, (size_t)st->n * (size_t)st->dim)))
        return o;
    cJSON_Delete(o);
    return NULL;
}

/* The tracked Pareto front: each member's generation, objective values and genome. */
static cJSON *front_json(const otc_neat_population *p) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < otc_neat_front_size(p); i++) {
        cJSON *m = cJSON_CreateObject();
        if (!m || !cJSON_AddItemToArray(a, m)) {
            cJSON_Delete(m);
            m = NULL;
        }
        if (!m || !add_num(m, "generation", otc_neat_front_generation(p, i)) ||
            !add_item(
                m, "values",
                reals_json(otc_neat_front_values(p, i), NULL, (size_t)p->config.n_objectives)) ||
            !add_item(m, "genome", otc_neat_genome_to_cjson(otc_neat_front_genome(p, i)))) {
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

static bool get_real(const cJSON *o, const char *k, double *v) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsNumber(j)) return *v = j->valuedouble, true;
    if (!cJSON_IsString(j)) return false;
    if (!strcmp(j->valuestring, "nan")) return *v = NAN, true;
    if (!strcmp(j->valuestring, "inf")) return *v = INFINITY, true;
    if (!strcmp(j->valuestring, "-inf")) return *v = -INFINITY, true;
    return false;
}

static bool get_int(const cJSON *o, const char *k, long lo, long hi, long *v) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble) || j->valuedouble < lo ||
        j->valuedouble > hi)
        return false;
    *v = (long)j->valuedouble;
    return true;
}

static cJSON *stats_json(const otc_neat_gen_stats *s) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    bool ok = add_num(o, "generation", s->generation) &&
              add_num(o, "evaluations", (double)s->evaluations) &&
              add_real(o, "best_fitness", s->best_fitness) &&
              add_real(o, "mean_fitness", s->mean_fitness) &&
              add_real(o, "stdev_fitness", s->stdev_fitness) &&
              add_num(o, "species", s->n_species) && add_real(o, "threshold", s->threshold) &&
              add_real(o, "mean_hidden", s->mean_hidden) &&
              add_real(o, "mean_connections", s->mean_connections) &&
              add_num(o, "champion_hidden", s->champion_hidden) &&
              add_num(o, "champion_connections", s->champion_connections) &&
              add_real(o, "confirm_score", s->confirm_score) && add_real(o, "seconds", s->seconds);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static bool stats_from_json(const cJSON *o, otc_neat_gen_stats *s) {
    long gen = 0, evals = 0, ns = 0, ch = 0, cc = 0;
    bool ok = get_int(o, "generation", 0, 1L << 30, &gen) &&
              get_int(o, "evaluations", 0, 1L << 52, &evals) &&
              get_real(o, "best_fitness", &s->best_fitness) &&
              get_real(o, "mean_fitness", &s->mean_fitness) &&
              get_real(o, "stdev_fitness", &s->stdev_fitness) &&
              get_int(o, "species", 0, 1L << 30, &ns) && get_real(o, "threshold", &s->threshold) &&
              get_real(o, "mean_hidden", &s->mean_hidden) &&
              get_real(o, "mean_connections", &s->mean_connections) &&
              get_int(o, "champion_hidden", 0, 1L << 30, &ch) &&
              get_int(o, "champion_connections", 0, 1L << 30, &cc) &&
              get_real(o, "confirm_score", &s->confirm_score) &&
              get_real(o, "seconds", &s->seconds);
    s->generation = (int)gen;
    s->evaluations = evals;
    s->n_species = (int)ns;
    s->champion_hidden = (int)ch;
    s->champion_connections = (int)cc;
    return ok;
}

/* The config's effective values, {"Section": {"key": "value"}}. */
typedef struct {
    cJSON *root;
    bool ok;
} config_listing;

static void list_key(void *ctx, const char *section, const char *key, const char *value) {
    config_listing *l = ctx;
    cJSON *sec = cJSON_GetObjectItemCaseSensitive(l->root, section);
    if (!sec) sec = cJSON_AddObjectToObject(l->root, section);
    if (!sec || !cJSON_AddStringToObject(sec, key, value)) l->ok = false;
}

static cJSON *config_json(const otc_neat_config *c) {
    config_listing l = {cJSON_CreateObject(), true};
    if (l.root) otc_neat_config_list(c, list_key, &l);
    if (!l.ok) {
        cJSON_Delete(l.root);
        return NULL;
    }
    return l.root;
}

static cJSON *population_json(const otc_neat_population *p) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, p->seed);
    cJSON *config = config_json(&p->config);
    bool ok = config && cJSON_AddStringToObject(root, "format", CHECKPOINT_FORMAT) &&
              add_num(root, "version", CHECKPOINT_VERSION) &&
              cJSON_AddStringToObject(root, "task", p->task) &&
              cJSON_AddItemToObject(root, "config", config) &&
              cJSON_AddStringToObject(root, "seed", seed) &&
              add_num(root, "generation", p->generation) &&
              add_num(root, "evaluations", (double)p->evaluations) &&
              add_real(root, "threshold", p->threshold) &&
              add_num(root, "next_species_id", p->next_species_id) &&
              add_real(root, "population_best", p->pop_best) &&
              add_num(root, "population_best_generation", p->pop_best_generation) &&
              add_num(root, "stop", p->stop) && add_num(root, "pop_size", p->config.pop_size) &&
              add_num(root, "num_inputs", p->config.num_inputs) &&
              add_num(root, "num_outputs", p->config.num_outputs) &&
              add_num(root, "next_node", otc_neat_innovations_next_node(p->innov)) &&
              add_num(root, "next_innov", otc_neat_innovations_next_innov(p->innov));
    cJSON *pairs = ok ? cJSON_AddArrayToObject(root, "innovations") : NULL;
    for (int i = 0; pairs && i < otc_neat_innovations_count(p->innov); i++) {
        int in, out, innov;
        otc_neat_innovations_get(p->innov, i, &in, &out, &innov);
        int v[3] = {in, out, innov};
        cJSON *a = cJSON_CreateIntArray(v, 3);
        if (!a || !cJSON_AddItemToArray(pairs, a)) ok = false;
    }
    cJSON *genomes = ok && pairs ? cJSON_AddArrayToObject(root, "genomes") : NULL;
    for (int i = 0; genomes && ok && i < p->n_genomes; i++) {
        cJSON *g = otc_neat_genome_to_cjson(p->genomes[i]);
        if (!g || !cJSON_AddItemToArray(genomes, g)) ok = false;
    }
    cJSON *species = ok && genomes ? cJSON_AddArrayToObject(root, "species") : NULL;
    for (int i = 0; species && ok && i < p->n_species; i++) {
        const otc_neat_species *sp = &p->species[i];
        cJSON *o = cJSON_CreateObject(), *rep = otc_neat_genome_to_cjson(sp->representative);
        cJSON *members = cJSON_CreateIntArray(sp->members, sp->n_members);
        if (!o || !rep || !members || !cJSON_AddItemToArray(species, o)) {
            cJSON_Delete(o);
            cJSON_Delete(rep);
            cJSON_Delete(members);
            ok = false;
            break;
        }
        ok = add_num(o, "id", sp->id) && add_num(o, "created", sp->created) &&
             add_num(o, "last_improved", sp->last_improved) &&
             add_real(o, "fitness", sp->fitness) && add_real(o, "best_fitness", sp->best_fitness) &&
             add_real(o, "confirm_best", sp->confirm_best) &&
             cJSON_AddBoolToObject(o, "confirm_checked", sp->confirm_checked) &&
             cJSON_AddItemToObject(o, "representative", rep) &&
             cJSON_AddItemToObject(o, "members", members);
    }
    if (ok && p->champion) {
        cJSON *ch = otc_neat_genome_to_cjson(p->champion);
        ok = ch && cJSON_AddItemToObject(root, "champion", ch) &&
             add_num(root, "champion_generation", p->champion_generation);
    }
    otc_neat_novelty_state nst;
    if (ok && otc_neat_novelty_get(p, &nst)) {
        ok = add_item(root, "novelty", novelty_json(&nst));
    }
    if (ok && otc_neat_front_size(p) > 0) {
        ok = add_item(root, "front", front_json(p));
    }
    cJSON *stats = ok && species ? cJSON_AddArrayToObject(root, "stats") : NULL;
    for (int i = 0; stats && ok && i < p->n_stats; i++) {
        cJSON *s = stats_json(&p->stats[i]);
        if (!s || !cJSON_AddItemToArray(stats, s)) ok = false;
    }
    if (!ok || !stats) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

otc_status otc_neat_checkpoint_save(const otc_neat_population *p, const char *path) {
    if (!p || !path) return otc_fail(OTC_ERR_ARG, "otc_neat_checkpoint_save: NULL argument");
    cJSON *root = population_json(p);
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory writing a checkpoint", path);
    otc_status s = otc_write_file_atomic(path, text, strlen(text));
    free(text);
    return s;
}

/* Every refusal reads "FILE: where: what", where naming the field, genome or species. */
static otc_status bad(const char *path, otc_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static otc_status bad(const char *path, otc_status status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return otc_fail(status, "%s: %s", path, msg);
}

/* The config listing against the one recorded: the first key that differs is named. */
typedef struct {
    const cJSON *recorded;
    int n;
    char section[64], key[96], was[256], now[256];
    bool differs;
} config_compare;

static void compare_key(void *ctx, const char *section, const char *key, const char *value) {
    config_compare *cc = ctx;
    cc->n++;
    if (cc->differs) return;
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(cc->recorded, section);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sec, key);
    if (cJSON_IsString(v) && !strcmp(v->valuestring, value)) return;
    cc->differs = true;
    snprintf(cc->section, sizeof cc->section, "%s", section);
    snprintf(cc->key, sizeof cc->key, "%s", key);
    snprintf(cc->was, sizeof cc->was, "%s", cJSON_IsString(v) ? v->valuestring : "(not recorded)");
    snprintf(cc->now, sizeof cc->now, "%s", value);
}

/* Is [section] key among this config's keys? (A recorded key the config does not list.) */
typedef struct {
    const char *section, *key;
    bool found;
} key_find;

static void find_key(void *ctx, const char *section, const char *key, const char *value) {
    (void)value;
    key_find *f = ctx;
    if (!strcmp(f->section, section) && !strcmp(f->key, key)) f->found = true;
}

static otc_status check_origin(const cJSON *root, const char *path, const otc_neat_config *c,
                               const char *task, otc_neat_population *p) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "task");
    if (!cJSON_IsString(t) || strlen(t->valuestring) >= sizeof p->task)
        return bad(path, OTC_ERR_FORMAT, "task: missing or not a task name");
    if (task && strcmp(task, t->valuestring))
        return bad(path, OTC_ERR_CONFIG, "task: the checkpoint is from task '%s', not '%s'",
                   t->valuestring, task);
    snprintf(p->task, sizeof p->task, "%s", t->valuestring);
    config_compare cc = {.recorded = cJSON_GetObjectItemCaseSensitive(root, "config")};
    if (!cJSON_IsObject(cc.recorded))
        return bad(path, OTC_ERR_FORMAT, "config: missing or not an object");
    otc_neat_config_list(c, compare_key, &cc);
    if (cc.differs)
        return bad(path, OTC_ERR_CONFIG,
                   "config: [%s] %s: the checkpoint was made with '%s', this config has '%s' "
                   "(resume with the config the run started with)",
                   cc.section, cc.key, cc.was, cc.now);
    /* Without ctrnn this config lists no CTRNN keys: name the cause, not its first key. */
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cc.recorded, "DefaultGenome"), "ctrnn");
    if (!c->ctrnn && cJSON_IsString(rc) && !strcmp(rc->valuestring, "true"))
        return bad(path, OTC_ERR_CONFIG,
                   "config: [DefaultGenome] ctrnn: the checkpoint's run evolves CTRNN genomes "
                   "(resume with --ctrnn or the config's ctrnn = true)");
    int recorded = 0;
    const cJSON *sec, *k;
    cJSON_ArrayForEach(sec, cc.recorded) {
        if (!cJSON_IsObject(sec))
            return bad(path, OTC_ERR_FORMAT, "config: [%s]: not an object", sec->string);
        cJSON_ArrayForEach(k, sec) {
            recorded++;
            key_find f = {.section = sec->string, .key = k->string};
            otc_neat_config_list(c, find_key, &f);
            if (!f.found)
                return bad(path, OTC_ERR_CONFIG,
                           "config: [%s] %s = '%s': the checkpoint was made with it, this config "
                           "leaves it out (resume with the config and options the run started "
                           "with)",
                           sec->string, k->string, cJSON_IsString(k) ? k->valuestring : "?");
        }
    }
    if (recorded != cc.n) /* every recorded key known: one is there twice */
        return bad(path, OTC_ERR_CONFIG,
                   "config: records %d keys, this otc knows %d (made by another version?)",
                   recorded, cc.n);
    return OTC_OK;
}

/* An innovation table entry, for checking genomes' connections against the table. */
typedef struct {
    int innov, in, out;
} innov_entry;

static int by_innov(const void *a, const void *b) {
    int x = ((const innov_entry *)a)->innov, y = ((const innov_entry *)b)->innov;
    return (x > y) - (x < y);
}

typedef struct {
    const char *path;
    const otc_neat_config *c;
    int first_hidden; /* node ids below are the fixed inputs, bias and outputs */
    int next_node;    /* every node id in use is below */
    innov_entry *tab; /* the innovation table by innovation number */
    int n_tab;
} load_ctx;

/* A genome from the file: well formed, laid out as the config says (inputs, bias node,
 * outputs at their fixed ids, hidden nodes after), ids below the counters, every connection
 * the table's innovation for its pair, acyclic when feed-forward. */
static otc_status load_genome(const load_ctx *L, const cJSON *j, const char *what,
                              otc_neat_genome **out) {
    otc_neat_genome *g = NULL;
    otc_status s = otc_neat_genome_from_cjson(j, &g);
    if (s != OTC_OK) return otc_fail_context(s, "%s: %s", L->path, what);
    const otc_neat_config *c = L->c;
    int n_in = c->num_inputs, n_src = n_in + (c->bias_node ? 1 : 0);
    for (int id = 0; id < L->first_hidden && s == OTC_OK; id++) {
        otc_neat_node_type want = id < n_in    ? OTC_NEAT_INPUT
                                  : id < n_src ? OTC_NEAT_BIAS
                                               : OTC_NEAT_OUTPUT;
        const otc_neat_node *n = otc_neat_genome_find_node(g, id);
        static const char *names[] = {"input", "bias", "output", "hidden"};
        if (!n || n->type != want)
            s = bad(L->path, OTC_ERR_FORMAT, "%s: node %d: %s (the config makes it an %s node)",
                    what, id, n ? "wrong type" : "missing", names[want]);
    }
    for (int i = 0; i < g->n_nodes && s == OTC_OK; i++) {
        const otc_neat_node *n = &g->nodes[i];
        if (n->id >= L->first_hidden && n->type != OTC_NEAT_HIDDEN)
            s = bad(L->path, OTC_ERR_FORMAT,
                    "%s: node %d: type: must be hidden (the config has "
                    "%d inputs, %d outputs%s)",
                    what, n->id, n_in, c->num_outputs, c->bias_node ? " and a bias node" : "");
        else if (n->id >= L->next_node)
            s = bad(L->path, OTC_ERR_FORMAT, "%s: node %d: id: not below next_node (%d)", what,
                    n->id, L->next_node);
    }
    for (int i = 0; i < g->n_conns && s == OTC_OK; i++) {
        const otc_neat_conn *cn = &g->conns[i];
        innov_entry key = {cn->innov, 0, 0};
        const innov_entry *e = bsearch(&key, L->tab, (size_t)L->n_tab, sizeof *L->tab, by_innov);
        if (!e || e->in != cn->in || e->out != cn->out)
            s = bad(L->path, OTC_ERR_FORMAT,
                    "%s: connection %d (%d -> %d): innov: not the innovation table's number "
                    "for this pair",
                    what, cn->innov, cn->in, cn->out);
    }
    if (s == OTC_OK && c->feed_forward && otc_neat_genome_validate(g, true) != OTC_OK) {
        char msg[256];
        const char *m = otc_last_error();
        snprintf(msg, sizeof msg, "%s", strncmp(m, "genome: ", 8) ? m : m + 8);
        s = bad(L->path, OTC_ERR_FORMAT, "%s: %s", what, msg);
    }
    if (s != OTC_OK) {
        otc_neat_genome_free(g);
        return s;
    }
    *out = g;
    return OTC_OK;
}

#define NEED(cond, ...)                                                                            \
    do {                                                                                           \
        if (!(cond)) return bad(path, OTC_ERR_FORMAT, __VA_ARGS__);                                \
    } while (0)

/* A best-so-far value: finite, or -inf before anything was recorded. */
static bool get_best(const cJSON *o, const char *k, double *v) {
    return get_real(o, k, v) && !isnan(*v) && *v != INFINITY;
}

/* An array of exactly n finite numbers, into d (doubles) or f (floats, each within f32). */
static bool get_reals(const cJSON *o, const char *k, long n, double *d, float *f) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k), *it;
    if (!cJSON_IsArray(a) || (long)cJSON_GetArraySize(a) != n) return false;
    long i = 0;
    cJSON_ArrayForEach(it, a) {
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) return false;
        if (d) d[i] = it->valuedouble;
        if (f) {
            if (fabs(it->valuedouble) > FLT_MAX) return false;
            f[i] = (float)it->valuedouble;
        }
        i++;
    }
    return true;
}

/* The novelty archive: there from the first generation of a novelty search run, and only
 * then; behaviours of 1 .. OTC_NEAT_MAX_BC finite numbers, at most OTC_NEAT_MAX_ARCHIVE. */
static otc_status load_novelty(const cJSON *root, const char *path, const otc_neat_config *c,
                               long gen, otc_neat_population *p) {
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(root, "novelty");
    bool novelty = c->selection == OTC_NEAT_SELECT_NOVELTY;
    if (!nv) {
        NEED(!novelty || gen == 0, "novelty: missing (a novelty search run records its archive)");
        return OTC_OK;
    }
    NEED(novelty, "novelty: an archive, but [NEAT] selection is not novelty");
    long dim, quiet, n;
    double threshold, floor_;
    NEED(get_int(nv, "dim", 1, OTC_NEAT_MAX_BC, &dim), "novelty: dim: missing or not in 1..%d",
         OTC_NEAT_MAX_BC);
    NEED(get_real(nv, "threshold", &threshold) && get_real(nv, "floor", &floor_) &&
             isfinite(threshold) && floor_ > 0 && threshold >= floor_,
         "novelty: threshold and floor: missing, or not finite with 0 < floor <= threshold");
    NEED(get_int(nv, "quiet", 0, 1L << 50, &quiet), "novelty: quiet: missing or out of range");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(nv, "archive");
    n = cJSON_IsArray(a) ? (long)cJSON_GetArraySize(a) : -1;
    NEED(n >= 0 && n % dim == 0 && n / dim <= OTC_NEAT_MAX_ARCHIVE,
         "novelty: archive: missing, not whole behaviours of %ld numbers, or more than %d "
         "behaviours",
         dim, OTC_NEAT_MAX_ARCHIVE);
    float *archive = malloc(sizeof *archive * (size_t)(n + 1));
    if (!archive) return otc_fail(OTC_ERR_NOMEM, "out of memory for the novelty archive");
    otc_status s =
        get_reals(nv, "archive", n, NULL, archive)
            ? otc_neat_novelty_set(p, &(otc_neat_novelty_state){(int)dim, (int)(n / dim), archive,
                                                                threshold, floor_, quiet})
            : bad(path, OTC_ERR_FORMAT, "novelty: archive: a number that is not a finite f32");
    free(archive);
    return s;
}

/* The tracked Pareto front: members with their generation (up to the checkpoint's), their
 * objective values (finite, one per objective) and genomes checked like the population's. */
static otc_status load_front(const load_ctx *L, const cJSON *root, long gen,
                             otc_neat_population *p) {
    const char *path = L->path;
    const cJSON *front = cJSON_GetObjectItemCaseSensitive(root, "front"), *it;
    if (!front) return OTC_OK;
    NEED(cJSON_IsArray(front) && cJSON_GetArraySize(front) <= OTC_NEAT_MAX_FRONT,
         "front: not an array of at most %d members", OTC_NEAT_MAX_FRONT);
    int k = 0;
    cJSON_ArrayForEach(it, front) {
        long g;
        double v[OTC_NEAT_MAX_OBJECTIVES];
        NEED(get_int(it, "generation", 0, gen, &g),
             "front: member %d: generation: missing or not "
             "in [0, %ld]",
             k, gen);
        NEED(get_reals(it, "values", L->c->n_objectives, v, NULL),
             "front: member %d: values: not %d finite numbers", k, L->c->n_objectives);
        char what[48];
        snprintf(what, sizeof what, "front: member %d", k);
        otc_neat_genome *genome = NULL;
        otc_status s =
            load_genome(L, cJSON_GetObjectItemCaseSensitive(it, "genome"), what, &genome);
        if (s == OTC_OK) s = otc_neat_front_restore(p, genome, (int)g, v);
        if (s != OTC_OK) return s;
        k++;
    }
    return OTC_OK;
}

static otc_status load_tree(const cJSON *root, const char *path, const otc_neat_config *c,
                            const char *task, otc_neat_population *p, innov_entry **tab) {
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CHECKPOINT_FORMAT))
        return otc_fail(OTC_ERR_FORMAT, "%s: not an otc NEAT checkpoint", path);
    long v, gen, evals, nsid, stop, pop, next_node, next_innov;
    NEED(get_int(root, "version", 1, 1L << 30, &v), "version: missing or not an integer");
    if (v == 1)
        return bad(path, OTC_ERR_FORMAT,
                   "version: 1, written by an older otc: it records neither its task nor its "
                   "config, so it cannot be resumed safely (start a new run)");
    NEED(v == CHECKPOINT_VERSION, "version: %ld, not one this otc reads (%d)", v,
         CHECKPOINT_VERSION);
    otc_status s = check_origin(root, path, c, task, p);
    if (s != OTC_OK) return s;
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(root, "seed");
    char *end = NULL;
    NEED(cJSON_IsString(seed) && seed->valuestring[0] >= '0' && seed->valuestring[0] <= '9',
         "seed: missing or not a decimal string");
    errno = 0;
    p->seed = strtoull(seed->valuestring, &end, 10);
    NEED(!errno && *end == '\0', "seed: not a 64-bit unsigned decimal number");
    NEED(get_int(root, "generation", 0, 1L << 30, &gen), "generation: missing or not in [0, 2^30]");
    NEED(get_int(root, "evaluations", 0, 1L << 52, &evals),
         "evaluations: missing or not an integer >= 0");
    NEED(get_real(root, "threshold", &p->threshold) && isfinite(p->threshold) && p->threshold > 0,
         "threshold: missing or not a finite positive number");
    NEED(c->target_species > 0 || p->threshold == c->compatibility_threshold,
         "threshold: %.17g, but the config's compatibility_threshold is %.17g and does not "
         "adapt (target_species = 0)",
         p->threshold, c->compatibility_threshold);
    NEED(get_int(root, "next_species_id", 1, 1L << 30, &nsid),
         "next_species_id: missing or not in [1, 2^30]");
    NEED(get_int(root, "stop", 0, 3, &stop), "stop: missing or not in [0, 3]");
    NEED(get_int(root, "pop_size", 2, 1L << 30, &pop) && pop == c->pop_size,
         "pop_size: missing or not the config's %d", c->pop_size);
    long nin = 0, nout = 0;
    NEED(get_int(root, "num_inputs", 1, 1L << 30, &nin) && nin == c->num_inputs,
         "num_inputs: missing or not the config's %d", c->num_inputs);
    NEED(get_int(root, "num_outputs", 1, 1L << 30, &nout) && nout == c->num_outputs,
         "num_outputs: missing or not the config's %d", c->num_outputs);
    int first_hidden = c->num_inputs + (c->bias_node ? 1 : 0) + c->num_outputs;
    NEED(get_int(root, "next_node", 0, 1L << 30, &next_node),
         "next_node: missing or not in [0, 2^30]");
    NEED(next_node >= first_hidden + c->num_hidden,
         "next_node: %ld, but the config's genomes use node ids up to %d", next_node,
         first_hidden + c->num_hidden - 1);
    NEED(get_int(root, "next_innov", 0, 1L << 30, &next_innov),
         "next_innov: missing or not in [0, 2^30]");
    p->generation = (int)gen;
    p->evaluations = evals;
    p->next_species_id = (int)nsid;
    long pbg = 0;
    p->pop_best = -INFINITY;
    NEED(get_best(root, "population_best", &p->pop_best),
         "population_best: missing or not a finite number (or -inf)");
    NEED(get_int(root, "population_best_generation", 0, gen, &pbg),
         "population_best_generation: missing or not in [0, generation]");
    p->pop_best_generation = (int)pbg;
    p->stop = (int)stop;
    p->innov = otc_neat_innovations_new((int)next_node, (int)next_innov);
    if (!p->innov) return OTC_ERR_NOMEM;

    /* The innovation table: unique pairs, unique numbers below next_innov, nodes below
     * next_node. */
    const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(root, "innovations"), *it;
    NEED(cJSON_IsArray(pairs), "innovations: missing or not an array");
    int n_pairs = cJSON_GetArraySize(pairs), at = 0;
    *tab = malloc(sizeof **tab * ((size_t)n_pairs + 1));
    if (!*tab) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", path);
    cJSON_ArrayForEach(it, pairs) {
        int v3[3], k = 0;
        const cJSON *e;
        NEED(cJSON_IsArray(it) && cJSON_GetArraySize(it) == 3,
             "innovations: entry %d: not [in, out, innovation]", at);
        cJSON_ArrayForEach(e, it) {
            NEED(cJSON_IsNumber(e) && e->valuedouble == floor(e->valuedouble) &&
                     e->valuedouble >= 0 && e->valuedouble < (k < 2 ? next_node : next_innov),
                 "innovations: entry %d: %s not an integer in [0, %s)", at,
                 k < 2 ? "node id" : "innovation", k < 2 ? "next_node" : "next_innov");
            v3[k++] = (int)e->valuedouble;
        }
        (*tab)[at++] = (innov_entry){v3[2], v3[0], v3[1]};
        s = otc_neat_innovations_put(p->innov, v3[0], v3[1], v3[2]);
        if (s != OTC_OK) return otc_fail_context(s, "%s: innovations", path);
    }
    NEED(otc_neat_innovations_count(p->innov) == n_pairs,
         "innovations: a connection (in, out) is listed twice");
    qsort(*tab, (size_t)n_pairs, sizeof **tab, by_innov);
    for (int i = 1; i < n_pairs; i++)
        NEED((*tab)[i].innov != (*tab)[i - 1].innov,
             "innovations: innovation %d is given to two connections", (*tab)[i].innov);
    load_ctx L = {path, c, first_hidden, (int)next_node, *tab, n_pairs};

    const cJSON *genomes = cJSON_GetObjectItemCaseSensitive(root, "genomes");
    int n = cJSON_GetArraySize(genomes);
    NEED(cJSON_IsArray(genomes) && n == pop, "genomes: missing or not %ld genomes (pop_size)", pop);
    p->genomes = calloc((size_t)n, sizeof *p->genomes);
    if (!p->genomes) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", path);
    cJSON_ArrayForEach(it, genomes) {
        char what[32];
        snprintf(what, sizeof what, "genome %d", p->n_genomes);
        if ((s = load_genome(&L, it, what, &p->genomes[p->n_genomes])) != OTC_OK) return s;
        p->n_genomes++;
    }

    /* Species: unique ids below next_species_id, non-empty, and together holding every genome
     * exactly once (each genome's own "species" agreeing). */
    const cJSON *species = cJSON_GetObjectItemCaseSensitive(root, "species");
    NEED(cJSON_IsArray(species) && cJSON_GetArraySize(species) >= 1,
         "species: missing, not an array, or empty");
    int *owner = calloc((size_t)n, sizeof *owner); /* species id holding each genome, 0: none */
    if (!owner) return otc_fail(OTC_ERR_NOMEM, "%s: out of memory", path);
    int si = 0;
    cJSON_ArrayForEach(it, species) {
        long id = 0, created = 0, improved = 0;
        double fit = 0, best = 0, confirm_best = -INFINITY;
        char what[48];
        snprintf(what, sizeof what, "species %d", si++);
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(it, "representative");
        const cJSON *members = cJSON_GetObjectItemCaseSensitive(it, "members");
        const char *field =
            !get_int(it, "id", 1, nsid - 1, &id)        ? "id (in [1, next_species_id))"
            : !get_int(it, "created", 0, gen, &created) ? "created (in [0, generation])"
            : !get_int(it, "last_improved", 0, gen, &improved)
                ? "last_improved (in [0, generation])"
            : !get_real(it, "fitness", &fit) || !isfinite(fit) ? "fitness (a finite number)"
            : !get_best(it, "best_fitness", &best) ? "best_fitness (a finite number or -inf)"
            : !cJSON_IsArray(members) || cJSON_GetArraySize(members) < 1
                ? "members (a non-empty array)"
                : NULL;
        if (field) s = bad(path, OTC_ERR_FORMAT, "%s: %s: missing or invalid", what, field);
        for (int k = 0; k < p->n_species && s == OTC_OK; k++)
            if (p->species[k].id == id)
                s = bad(path, OTC_ERR_FORMAT, "%s: id: %ld is used by another species too", what,
                        id);
        otc_neat_genome *g = NULL;
        if (s == OTC_OK) {
            snprintf(what, sizeof what, "species %d (id %ld): representative", si - 1, id);
            s = load_genome(&L, rep, what, &g);
        }
        if (s != OTC_OK) break;
        int k = otc_neat_species_add(p, (int)id, g, (int)created);
        otc_neat_genome_free(g);
        if (k < 0) {
            s = OTC_ERR_NOMEM;
            break;
        }
        otc_neat_species *sp = &p->species[k];
        sp->last_improved = (int)improved;
        sp->fitness = fit;
        sp->best_fitness = best;
        /* Absent in checkpoints written before confirm rotation: a fresh species' values. */
        if (cJSON_GetObjectItemCaseSensitive(it, "confirm_best") &&
            !get_best(it, "confirm_best", &confirm_best)) {
            s = bad(path, OTC_ERR_FORMAT,
                    "species %d (id %ld): confirm_best: not a finite "
                    "number or -inf",
                    si - 1, id);
            break;
        }
        if (cJSON_GetObjectItemCaseSensitive(it, "confirm_best")) sp->confirm_best = confirm_best;
        sp->confirm_checked =
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "confirm_checked")) != 0;
        const cJSON *m;
        cJSON_ArrayForEach(m, members) {
            if (!cJSON_IsNumber(m) || m->valuedouble < 0 || m->valuedouble >= n ||
                m->valuedouble != floor(m->valuedouble)) {
                s = bad(path, OTC_ERR_FORMAT,
                        "species %d (id %ld): members: %s is not a genome index in [0, %d)", si - 1,
                        id, cJSON_IsNumber(m) ? "an entry" : "a non-number", n);
                break;
            }
            int gi = (int)m->valuedouble;
            if (owner[gi]) {
                s = bad(path, OTC_ERR_FORMAT,
                        "species %d (id %ld): members: genome %d is also a member of species id "
                        "%d",
                        si - 1, id, gi, owner[gi]);
                break;
            }
            if (p->genomes[gi]->species != id) {
                s = bad(path, OTC_ERR_FORMAT,
                        "species %d (id %ld): members: genome %d says it is in species %d", si - 1,
                        id, gi, p->genomes[gi]->species);
                break;
            }
            owner[gi] = (int)id;
            sp->members[sp->n_members++] = gi;
        }
        if (s != OTC_OK) break;
    }
    for (int i = 0; i < n && s == OTC_OK; i++)
        if (!owner[i]) s = bad(path, OTC_ERR_FORMAT, "genome %d: is a member of no species", i);
    free(owner);
    if (s != OTC_OK) return s;

    const cJSON *champ = cJSON_GetObjectItemCaseSensitive(root, "champion");
    if (champ) {
        long cg;
        if ((s = load_genome(&L, champ, "champion", &p->champion)) != OTC_OK) return s;
        NEED(get_int(root, "champion_generation", 0, gen, &cg),
             "champion_generation: missing or not in [0, generation]");
        p->champion_generation = (int)cg;
    }
    if ((s = load_novelty(root, path, c, gen, p)) != OTC_OK ||
        (s = load_front(&L, root, gen, p)) != OTC_OK)
        return s;
    const cJSON *stats = cJSON_GetObjectItemCaseSensitive(root, "stats");
    NEED(cJSON_IsArray(stats), "stats: missing or not an array");
    cJSON_ArrayForEach(it, stats) {
        otc_neat_gen_stats st;
        NEED(stats_from_json(it, &st) && st.generation == p->n_stats,
             "stats: entry %d: bad or missing field, or not generation %d", p->n_stats, p->n_stats);
        s = otc_neat_stats_push(p, &st);
        if (s != OTC_OK) return s;
    }
    /* A generation adds its statistics, then (unless the run stopped) moves on. */
    NEED(p->n_stats == gen || (stop && p->n_stats == gen + 1),
         "stats: %d entries for generation %ld", p->n_stats, gen);
    return OTC_OK;
}

otc_status otc_neat_checkpoint_parse(const char *text, size_t len, const char *name,
                                     const otc_neat_config *c, const char *task,
                                     otc_neat_population **out) {
    if (!text || !c || !out)
        return otc_fail(OTC_ERR_ARG, "otc_neat_checkpoint_parse: NULL argument");
    const char *path = name ? name : "checkpoint";
    cJSON *root = NULL;
    otc_status ps = otc_json_parse(text, len, OTC_JSON_VALUES_SMALL, &root);
    if (ps != OTC_OK) return otc_fail_context(ps, "%s: checkpoint", path);
    otc_neat_population *p = calloc(1, sizeof *p);
    innov_entry *tab = NULL;
    otc_status s = p ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory");
    if (p) {
        p->config = *c;
        s = load_tree(root, path, c, task, p, &tab);
    }
    free(tab);
    cJSON_Delete(root);
    if (s != OTC_OK) {
        otc_neat_population_free(p);
        return s;
    }
    *out = p;
    return OTC_OK;
}

otc_status otc_neat_checkpoint_load(const char *path, const otc_neat_config *c, const char *task,
                                    otc_neat_population **out) {
    if (!path || !c || !out)
        return otc_fail(OTC_ERR_ARG, "otc_neat_checkpoint_load: NULL argument");
    char *buf = NULL;
    size_t len = 0;
    otc_status rs = otc_read_text_file(path, OTC_MAX_CHECKPOINT_BYTES, &buf, &len);
    if (rs != OTC_OK) return rs;
    otc_status s = otc_neat_checkpoint_parse(buf, len, path, c, task, out);
    free(buf);
    return s;
}
