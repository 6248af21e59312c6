/* Checkpoints: the whole population state between generations as JSON (innovations,
 * genomes, species, champion, statistics), written atomically, so a resumed run continues
 * exactly as one that never stopped. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neat_internal.h"
#include "otc/file.h"

#define CHECKPOINT_FORMAT "otc-neat-checkpoint"

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

static cJSON *population_json(const otc_neat_population *p) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, p->seed);
    bool ok = cJSON_AddStringToObject(root, "format", CHECKPOINT_FORMAT) &&
              add_num(root, "version", 1) && cJSON_AddStringToObject(root, "seed", seed) &&
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

static otc_status bad(const char *path, const char *what) {
    return otc_fail(OTC_ERR_FORMAT, "%s: checkpoint: bad or missing %s", path, what);
}

static otc_status load_tree(const cJSON *root, const char *path, const otc_neat_config *c,
                            otc_neat_population *p) {
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CHECKPOINT_FORMAT))
        return otc_fail(OTC_ERR_FORMAT, "%s: not an otc NEAT checkpoint", path);
    long v, gen, evals, nsid, stop, pop, nin, nout, next_node, next_innov;
    if (!get_int(root, "version", 1, 1, &v)) return bad(path, "version (expected 1)");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(root, "seed");
    char *end = NULL;
    if (!cJSON_IsString(seed)) return bad(path, "seed");
    errno = 0;
    p->seed = strtoull(seed->valuestring, &end, 10);
    if (errno || end == seed->valuestring || *end) return bad(path, "seed");
    if (!get_int(root, "generation", 0, 1L << 30, &gen) ||
        !get_int(root, "evaluations", 0, 1L << 52, &evals) ||
        !get_real(root, "threshold", &p->threshold) ||
        !get_int(root, "next_species_id", 1, 1L << 30, &nsid) ||
        !get_int(root, "stop", 0, 3, &stop) || !get_int(root, "pop_size", 2, 1L << 30, &pop) ||
        !get_int(root, "num_inputs", 1, 1L << 30, &nin) ||
        !get_int(root, "num_outputs", 1, 1L << 30, &nout) ||
        !get_int(root, "next_node", 0, 1L << 30, &next_node) ||
        !get_int(root, "next_innov", 0, 1L << 30, &next_innov))
        return bad(path, "header field");
    if (pop != c->pop_size || nin != c->num_inputs || nout != c->num_outputs)
        return otc_fail(OTC_ERR_CONFIG,
                        "%s: checkpoint was made with pop_size %ld, num_inputs %ld, num_outputs "
                        "%ld; the config differs",
                        path, pop, nin, nout);
    p->generation = (int)gen;
    p->evaluations = evals;
    p->next_species_id = (int)nsid;
    /* Delta-coding state (absent in older checkpoints: nothing recorded yet). */
    long pbg = 0;
    p->pop_best = -INFINITY;
    if (cJSON_GetObjectItemCaseSensitive(root, "population_best") &&
        (!get_real(root, "population_best", &p->pop_best) ||
         !get_int(root, "population_best_generation", 0, 1L << 30, &pbg)))
        return bad(path, "population_best / population_best_generation");
    p->pop_best_generation = (int)pbg;
    p->stop = (int)stop;
    p->innov = otc_neat_innovations_new((int)next_node, (int)next_innov);
    if (!p->innov) return OTC_ERR_NOMEM;
    const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(root, "innovations"), *it;
    if (!cJSON_IsArray(pairs)) return bad(path, "innovations");
    cJSON_ArrayForEach(it, pairs) {
        int v3[3], k = 0;
        const cJSON *e;
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 3) return bad(path, "innovation entry");
        cJSON_ArrayForEach(e, it) {
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) ||
                e->valuedouble < 0 || e->valuedouble > 1e9)
                return bad(path, "innovation entry");
            v3[k++] = (int)e->valuedouble;
        }
        otc_status s = otc_neat_innovations_put(p->innov, v3[0], v3[1], v3[2]);
        if (s != OTC_OK) return otc_fail_context(s, "%s", path);
    }
    const cJSON *genomes = cJSON_GetObjectItemCaseSensitive(root, "genomes");
    int n = cJSON_GetArraySize(genomes);
    if (!cJSON_IsArray(genomes) || n < 1 || n > pop) return bad(path, "genomes");
    p->genomes = calloc((size_t)n, sizeof *p->genomes);
    if (!p->genomes) return OTC_ERR_NOMEM;
    cJSON_ArrayForEach(it, genomes) {
        otc_status s = otc_neat_genome_from_cjson(it, &p->genomes[p->n_genomes]);
        if (s != OTC_OK) return otc_fail_context(s, "%s: genome %d", path, p->n_genomes);
        p->n_genomes++;
    }
    const cJSON *species = cJSON_GetObjectItemCaseSensitive(root, "species");
    if (!cJSON_IsArray(species)) return bad(path, "species");
    cJSON_ArrayForEach(it, species) {
        long id, created, improved;
        double fit, best;
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(it, "representative");
        const cJSON *members = cJSON_GetObjectItemCaseSensitive(it, "members");
        if (!get_int(it, "id", 1, 1L << 30, &id) ||
            !get_int(it, "created", 0, 1L << 30, &created) ||
            !get_int(it, "last_improved", 0, 1L << 30, &improved) ||
            !get_real(it, "fitness", &fit) || !get_real(it, "best_fitness", &best) ||
            !cJSON_IsArray(members) || cJSON_GetArraySize(members) > p->n_genomes)
            return bad(path, "species entry");
        otc_neat_genome *g = NULL;
        otc_status s = otc_neat_genome_from_cjson(rep, &g);
        if (s != OTC_OK) return otc_fail_context(s, "%s: species %ld", path, id);
        int k = otc_neat_species_add(p, (int)id, g, (int)created);
        otc_neat_genome_free(g);
        if (k < 0) return OTC_ERR_NOMEM;
        otc_neat_species *sp = &p->species[k];
        sp->last_improved = (int)improved;
        sp->fitness = fit;
        sp->best_fitness = best;
        /* Absent in checkpoints written before confirm rotation: a fresh species' values. */
        double confirm_best;
        if (get_real(it, "confirm_best", &confirm_best)) sp->confirm_best = confirm_best;
        sp->confirm_checked =
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "confirm_checked")) != 0;
        const cJSON *m;
        cJSON_ArrayForEach(m, members) {
            if (!cJSON_IsNumber(m) || m->valuedouble < 0 || m->valuedouble >= p->n_genomes ||
                m->valuedouble != floor(m->valuedouble))
                return bad(path, "species member");
            sp->members[sp->n_members++] = (int)m->valuedouble;
        }
    }
    const cJSON *champ = cJSON_GetObjectItemCaseSensitive(root, "champion");
    if (champ) {
        long cg;
        otc_status s = otc_neat_genome_from_cjson(champ, &p->champion);
        if (s != OTC_OK) return otc_fail_context(s, "%s: champion", path);
        if (!get_int(root, "champion_generation", 0, 1L << 30, &cg))
            return bad(path, "champion_generation");
        p->champion_generation = (int)cg;
    }
    const cJSON *stats = cJSON_GetObjectItemCaseSensitive(root, "stats");
    if (!cJSON_IsArray(stats)) return bad(path, "stats");
    cJSON_ArrayForEach(it, stats) {
        otc_neat_gen_stats st;
        if (!stats_from_json(it, &st)) return bad(path, "stats entry");
        otc_status s = otc_neat_stats_push(p, &st);
        if (s != OTC_OK) return s;
    }
    for (int i = 0; i < p->n_genomes; i++) {
        otc_status s = otc_neat_genome_validate(p->genomes[i], c->feed_forward);
        if (s != OTC_OK) return otc_fail_context(s, "%s: genome %d", path, i);
    }
    return OTC_OK;
}

otc_status otc_neat_checkpoint_load(const char *path, const otc_neat_config *c,
                                    otc_neat_population **out) {
    if (!path || !c || !out)
        return otc_fail(OTC_ERR_ARG, "otc_neat_checkpoint_load: NULL argument");
    char *buf = NULL;
    size_t len = 0;
    otc_status rs = otc_read_text_file(path, OTC_MAX_CHECKPOINT_BYTES, &buf, &len);
    if (rs != OTC_OK) return rs;
    cJSON *root = cJSON_ParseWithLength(buf, len);
    free(buf);
    if (!root) return otc_fail(OTC_ERR_FORMAT, "%s: checkpoint is not valid JSON", path);
    otc_neat_population *p = calloc(1, sizeof *p);
    otc_status s = p ? OTC_OK : otc_fail(OTC_ERR_NOMEM, "out of memory");
    if (p) {
        p->config = *c;
        s = load_tree(root, path, c, p);
    }
    cJSON_Delete(root);
    if (s != OTC_OK) {
        otc_neat_population_free(p);
        return s;
    }
    *out = p;
    return OTC_OK;
}
