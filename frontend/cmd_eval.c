/* `otc eval CHAMPION.otm --config CONFIG.ini --task TASK`: scores a network saved by `otc
 * evolve` on any evolve task, episode by episode, as evolution scored it. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "otc/neat.h"
#include "otc/otc.h"

const char otc_cmd_eval_summary[] = "score an evolved network on a task (xor, poles, csv, exec)";

#define MAX_EPISODES 10000

/* The fitness `otc evolve` recorded with the champion ("neat" metadata), or NAN. */
static double recorded_fitness(const otc_graph *g) {
    const char *json = otc_graph_meta_get(g, "neat");
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "fitness");
    double v = cJSON_IsNumber(f) ? f->valuedouble : NAN;
    cJSON_Delete(o);
    return v;
}

int otc_cmd_eval(int argc, char **argv) {
    const char *task_spec = NULL, *config_path = NULL;
    int episodes = -1; /* -1: the config's [Task] episodes */
    uint64_t seed = 1;
    const otc_opt opts[] = {
        {"--task", OTC_OPT_STRING, &task_spec,
         "TASK: as otc evolve's: xor, xor:neat-python, pole1, pole1:neat-python, dpv, dpnv, "
         "csv:FILE or exec:PROGRAM (required)"},
        {"--config", OTC_OPT_STRING, &config_path,
         "FILE.ini: the config the network was evolved with (required: inputs, outputs, "
         "fitness threshold, [Task] and [Hybrid] keys)"},
        {"--episodes", OTC_OPT_RANGE, OTC_RANGE(episodes, 1, MAX_EPISODES),
         "N: episodes to score, each with its own seed (default: the config's [Task] "
         "episodes, else 1)"},
        {"--seed", OTC_OPT_U64, &seed,
         "S: episode 1's seed; the others are derived from it as evolution derives them "
         "(default 1)"},
    };
    const char *pos[1];
    int rc = otc_cli_parse("eval", "MODEL.otm --config CONFIG.ini --task TASK [options]", opts,
                           (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc) return rc < 0 ? OTC_EXIT_OK : rc;
    if (!task_spec) return otc_cli_error("eval", "--task is required (try 'otc eval --help')");
    if (!config_path)
        return otc_cli_error("eval", "--config CONFIG.ini is required: the config the network "
                                     "was evolved with");
    if (episodes != -1 && (episodes < 1 || episodes > MAX_EPISODES))
        return otc_cli_error("eval", "--episodes must be from 1 to %d, not %d", MAX_EPISODES,
                             episodes);

    if ((rc = otc_cli_check_task("eval", task_spec))) return rc;
    char sm[512];
    otc_cli_printable(pos[0], sm, sizeof sm);
    otc_graph *g = NULL;
    if ((rc = otc_cli_load_model("eval", pos[0], &g))) return rc;
    const char *genome_json = otc_graph_meta_get(g, "genome");
    if (!genome_json) {
        otc_graph_free(g);
        return otc_cli_error("eval",
                             "%s holds no NEAT genome: otc eval scores networks saved by "
                             "otc evolve --out",
                             sm);
    }
    double recorded = recorded_fitness(g);
    otc_neat_genome *genome = NULL;
    if (otc_neat_genome_from_json(genome_json, &genome) != OTC_OK) {
        rc = otc_cli_error("eval", "%s: its \"genome\" metadata: %s", sm, otc_last_error());
        otc_graph_free(g);
        return rc;
    }
    otc_graph_free(g);

    otc_neat_config config;
    otc_neat_task *task = NULL;
    double *each = NULL;
    if (otc_neat_config_load(config_path, &config) != OTC_OK) {
        rc = otc_cli_error("eval", "%s", otc_last_error());
        goto done;
    }
    if (config.ctrnn && otc_neat_config_ctrnn(&config, config_path, 0, 0) != OTC_OK) {
        rc = otc_cli_error("eval", "%s", otc_last_error());
        goto done;
    }
    otc_status ts = otc_neat_task_create(task_spec, &config, &task);
    if (ts != OTC_OK) {
        rc = ts == OTC_ERR_CONFIG ? otc_cli_error("eval", "%s: %s", config_path, otc_last_error())
                                  : otc_cli_error("eval", "%s", otc_last_error());
        goto done;
    }
    if (otc_neat_ctrnn_times(&config, task) != OTC_OK) {
        rc = otc_cli_error("eval", "%s: %s", config_path, otc_last_error());
        goto done;
    }
    if (episodes == -1) episodes = config.episodes > 0 ? config.episodes : 1;
    each = malloc((size_t)episodes * sizeof *each);
    if (!each) {
        rc = otc_cli_error("eval", "out of memory");
        goto done;
    }
    /* Fitness as evolution records it: less the config's complexity penalty. */
    double penalty = config.complexity_penalty *
                     (otc_neat_genome_hidden_count(genome) + otc_neat_genome_enabled_count(genome));
    int solved = 0;
    double sum = 0;
    for (int k = 0; k < episodes; k++) {
        otc_neat_eval ev;
        if (otc_neat_evaluate_episodes(task, &config, genome, otc_neat_episode_seed(seed, k), 1,
                                       NULL, &ev) != OTC_OK) {
            rc = otc_cli_error("eval", "%s: episode %d: %s", sm, k + 1, otc_last_error());
            goto done;
        }
        each[k] = ev.fitness - penalty;
        sum += each[k];
        solved += ev.solved;
        printf("episode %d: fitness %.9g%s\n", k + 1, each[k], ev.solved ? " (solved)" : "");
    }
    double mean = sum / episodes, var = 0;
    for (int k = 0; k < episodes; k++) var += (each[k] - mean) * (each[k] - mean);
    printf("%s on %s: mean fitness %.9g over %d episode%s (sd %.3g), solved in %d\n", sm,
           task->name, mean, episodes, episodes == 1 ? "" : "s",
           episodes > 1 ? sqrt(var / (episodes - 1)) : 0.0, solved);
    if (!isnan(recorded)) printf("recorded by otc evolve: fitness %.9g\n", recorded);
    rc = OTC_EXIT_OK;
done:
    free(each);
    otc_neat_task_free(task);
    otc_neat_genome_free(genome);
    return rc;
}
