/* `otc evolve`: run NEAT (optionally with gradient training in the loop) on a built-in task or
 * a CSV, with progress, checkpoints, statistics, and the champion saved as a .otm graph. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <ctype.h>
#include <errno.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_mpi.h"
#include "otc/file.h"
#include "otc/hyperneat.h"
#include "otc/model.h"
#include "otc/neat.h"
#include "otc/neat_maze.h"
#ifdef OTC_HAVE_JIT
#include "otc/jit.h"
#endif

const char otc_cmd_evolve_summary[] =
    "evolve a network with NEAT (xor, pole1, dpv, dpnv, maze, csv:FILE, exec:PROGRAM)";

static void progress(void *ctx, const otc_neat_population *p, const otc_neat_gen_stats *s) {
    const char *score_name = ctx;
    char score[64] = "";
    if (score_name && !isnan(s->confirm_score))
        snprintf(score, sizeof score, "  %s %.4g", score_name, s->confirm_score);
    int pop = otc_neat_population_size(p);
    fprintf(stderr,
            "gen %4d  best %-10.6g mean %-10.6g species %3d  hidden %5.2f  conns %6.2f  "
            "champion %d/%d  evals %ld  %.0f eval/s%s\n",
            s->generation, s->best_fitness, s->mean_fitness, s->n_species, s->mean_hidden,
            s->mean_connections, s->champion_hidden, s->champion_connections, s->evaluations,
            s->seconds > 0 ? pop / s->seconds : 0.0, score);
}

/* Would a checkpoint this run writes (P<g>.json for the generations after `from` up to
 * `generations` that are multiples of `every`) land on one of the files (the first n_in
 * inputs, then outputs)? A file can only be one if its name, or its link target's, is
 * P<g>.json, so that g is the one to check; the checkpoints are not listed one by one. */
static int checkpoint_over_file(const char *prefix, int every, int from, int generations,
                                const otc_cli_file *in, int n_files, int n_in) {
    if (every <= 0) return 0;
    const char *pslash = strrchr(prefix, '/');
    const char *pbase = pslash ? pslash + 1 : prefix;
    size_t plen = strlen(pbase);
    for (int i = 0; i < n_files; i++) {
        if (!in[i].path || !strcmp(in[i].path, "-")) continue;
        char real[PATH_MAX];
        const char *names[2] = {in[i].path, realpath(in[i].path, real)};
        for (int k = 0; k < 2; k++) {
            if (!names[k]) continue;
            const char *slash = strrchr(names[k], '/');
            const char *base = slash ? slash + 1 : names[k];
            if (strncmp(base, pbase, plen) || !isdigit((unsigned char)base[plen])) continue;
            char *end;
            long g = strtol(base + plen, &end, 10);
            if (strcmp(end, ".json") || g <= from || g > generations || g % every) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s%ld.json", prefix, g);
            if (!otc_same_file(path, in[i].path)) continue;
            char sp[512];
            return otc_cli_error("evolve",
                                 "--checkpoint-prefix and %s name the same file (%s): the "
                                 "checkpoint of generation %ld %s",
                                 in[i].option, otc_cli_printable(path, sp, sizeof sp), g,
                                 i < n_in ? "would overwrite an input"
                                          : "and that output would overwrite each other");
        }
    }
    return 0;
}

#define N_EVOLVE_INS   3  /* CONFIG, --resume, --task csv: */
#define N_EVOLVE_FILES 11 /* and --out, --stats, --plot, --maze-svg, --substrate-svg, --front's */

/* What the population's run needs from the command line. */
typedef struct {
    const char *resume;
    bool seed_given;
    uint64_t seed;
    const char *prefix;
    int every, generations;
    bool jit;
    int jit_steps; /* --jit-steps, -1: the policy's break-even */
    int threads;
    const char *stats, *plot, *out;
    const char *front; /* --front DIR, or NULL */
    const char *maze_svg;
    const char *substrate_svg;
    int max_connections;
    double max_cost;
    const char *csv;           /* the csv task's file, or NULL */
    const otc_cli_file *files; /* N_EVOLVE_INS inputs, then the outputs */
    otc_neat_config *config;
    const otc_neat_remote *remote; /* rank 0 under mpirun; NULL otherwise */
    otc_neat_task *reevaluate;     /* --reevaluate: the champion scored on it too, or NULL */
} evolve_args;

/* --front: the run's Pareto front into its directory, and the member a budget (or the knee)
 * chooses printed and saved as chosen.otm. */
static int save_front(const evolve_args *a, const otc_neat_population *pop,
                      const otc_neat_task *task) {
    char shown[512];
    otc_cli_printable(a->front, shown, sizeof shown);
    if (mkdir(a->front, 0777) != 0 && errno != EEXIST)
        return otc_cli_error("evolve", "--front %s: cannot create the directory: %s", shown,
                             strerror(errno));
    if (otc_neat_front_save(pop, task, a->front) != OTC_OK)
        return otc_cli_error("evolve", "--front %s: %s", shown, otc_last_error());
    int n = otc_neat_front_size(pop);
    int k = otc_neat_front_choose(pop, a->max_connections, a->max_cost);
    printf("front: %d member(s) in %s (member-K.otm, front.csv, front.svg)\n", n, shown);
    if (k < 0) {
        printf("front: no member within the budget\n");
        return OTC_EXIT_GOAL;
    }
    const otc_neat_genome *g = otc_neat_front_genome(pop, k);
    const char *why = a->max_connections >= 0 || a->max_cost >= 0 ? "budget" : "knee";
    printf("chosen (%s): member %d, fitness %.6g, %d hidden node(s), %d enabled connection(s), "
           "cost %.0f; saved to %s/chosen.otm\n",
           why, k, g->fitness, otc_neat_genome_hidden_count(g), otc_neat_genome_enabled_count(g),
           otc_neat_objective_value(OTC_NEAT_OBJ_COST, g), shown);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/chosen.otm", a->front) >= (int)sizeof path)
        return otc_cli_error("evolve", "--front %s: name too long", shown);
    otc_graph *gr = NULL;
    otc_status s = otc_neat_genome_graph_of(pop, k, task, &gr);
    if (s == OTC_OK) s = otc_model_save(gr, path);
    otc_graph_free(gr);
    if (s != OTC_OK) return otc_cli_error("evolve", "%s", otc_last_error());
    return 0;
}

/* The champion scored once more by task (a copy: evaluation may write into it). */
static int score_champion(const evolve_args *a, const otc_neat_task *task,
                          const otc_neat_genome *champ, otc_neat_eval *ev) {
    otc_neat_genome *g = otc_neat_genome_copy(champ);
    if (!g) return otc_cli_error("evolve", "out of memory for the champion's copy");
    otc_status s = task->evaluate(task, a->config, g, a->seed, ev);
    otc_neat_genome_free(g);
    if (s != OTC_OK)
        return otc_cli_error("evolve", "%s%s", task == a->reevaluate ? "--reevaluate: " : "",
                             otc_last_error());
    return OTC_EXIT_OK;
}

/* The champion's own measure, for a task with one beside its fitness (visual: the paper's
 * mean distance). */
static int print_measure(const evolve_args *a, const otc_neat_task *task,
                         const otc_neat_genome *champ) {
    otc_neat_eval ev = {.fitness = 0};
    if (score_champion(a, task, champ, &ev) != OTC_EXIT_OK) return OTC_EXIT_USAGE;
    printf("%s: champion %s = %.6g\n", task->name, task->measure_name, ev.measure);
    return OTC_EXIT_OK;
}

/* The champion's fitness on another task without further evolution (HyperNEAT's CPPN at a
 * finer resolution: --reevaluate visual:33). */
static int reevaluate(const evolve_args *a, const otc_neat_genome *champ) {
    otc_neat_eval ev = {.fitness = 0};
    if (score_champion(a, a->reevaluate, champ, &ev) != OTC_EXIT_OK) return OTC_EXIT_USAGE;
    printf("%s: champion fitness %.6g%s (re-evaluated, no further evolution)", a->reevaluate->name,
           ev.fitness, ev.solved ? ", solved" : "");
    if (a->reevaluate->measure_name) printf("; %s = %.6g", a->reevaluate->measure_name, ev.measure);
    printf("\n");
    return OTC_EXIT_OK;
}

/* --substrate-svg: the substrate the champion's CPPN paints (or, ES-HyperNEAT, places; trained
 * when the task trains it). */
static int save_substrate_svg(const evolve_args *a, const otc_neat_genome *champ,
                              const otc_neat_task *task) {
    otc_substrate *s = NULL;
    otc_status st = task->substrate ? task->substrate(task, a->config, champ, &s)
                                    : otc_substrate_from_genome(champ, a->config, 1, NULL, &s);
    if (st == OTC_OK) st = otc_substrate_save_svg(s, task->name, a->substrate_svg);
    otc_substrate_free(s);
    if (st != OTC_OK) return otc_cli_error("evolve", "--substrate-svg: %s", otc_last_error());
    printf("substrate picture saved to %s\n", a->substrate_svg);
    return OTC_EXIT_OK;
}

/* The csv task's columns (as the task reads them) recorded with its champion, so `otc run`
 * takes a file's columns by name. */
static otc_status record_csv_columns(otc_graph *g, const char *csv, const otc_neat_config *c) {
    if (!csv || !c->csv_header) return OTC_OK;
    otc_csv_options o = {.header = true,
                         .targets = c->targets[0] ? c->targets : NULL,
                         .last_target = !c->targets[0],
                         .sequence = c->sequence[0] ? c->sequence : NULL};
    otc_dataset *d = NULL;
    otc_status s = otc_csv_load(csv, &o, &d);
    if (s == OTC_OK)
        s = otc_cli_record_columns(g, d->feature_names, d->n_features, d->target_names,
                                   d->n_targets, d->seq_name); /* by name, if given by index */
    otc_dataset_free(d);
    return s;
}

/* A run can take hours: an output that cannot be written is refused before it starts
 * (--front's directory made now, its files tried), not after it. */
static int outputs_writable(const evolve_args *a) {
    if (a->front && mkdir(a->front, 0777) != 0 && errno != EEXIST) {
        char shown[512];
        return otc_cli_error("evolve", "--front %s: cannot create the directory: %s",
                             otc_cli_printable(a->front, shown, sizeof shown), strerror(errno));
    }
    return otc_cli_check_writable("evolve", a->files + N_EVOLVE_INS, N_EVOLVE_FILES - N_EVOLVE_INS);
}

/* A new or resumed population run to its end, with its statistics, plot and champion. */
static int evolve_population(const evolve_args *a, otc_neat_task *task) {
    otc_neat_population *pop = NULL;
    otc_status s;
    int rc;
    if (a->resume) {
        s = otc_neat_checkpoint_load(a->resume, a->config, task->name, &pop);
        if (s == OTC_OK && a->seed_given && otc_neat_seed(pop) != a->seed) {
            uint64_t made_with = otc_neat_seed(pop);
            otc_neat_population_free(pop);
            return otc_cli_error("evolve", "%s was made with seed %" PRIu64 ", not %" PRIu64,
                                 a->resume, made_with, a->seed);
        }
    } else {
        s = otc_neat_population_new(a->config, a->seed, &pop);
    }
    if (s != OTC_OK) {
        return otc_cli_error("evolve", "%s", otc_last_error());
    }
    if ((rc = checkpoint_over_file(a->prefix, a->every, otc_neat_generation(pop), a->generations,
                                   a->files, N_EVOLVE_FILES, N_EVOLVE_INS)) ||
        (rc = outputs_writable(a))) {
        otc_neat_population_free(pop);
        return rc;
    }
    if (a->jit) {
#ifdef OTC_HAVE_JIT
        /* Genomes run on the flat program; one that runs past the compile's break-even
         * switches to exact compiled code (the same results: otc_jit_policy_compiled). Hybrid
         * training runs graphs under the policy's executor, which decides from the training's
         * size (compiler/src/llvm/jit/llvm_policy.c). */
        otc_jit_policy jp = otc_jit_policy_defaults();
        jp.train_samples = (double)a->config->train_steps * a->config->batch_size;
        if (a->jit_steps >= 0) { /* every genome that runs that long, whatever its size */
            jp.flat_steps = a->jit_steps;
            jp.flat_min_nodes = 0;
        }
        otc_jit_policy_set(&jp);
        if (a->config->train_steps > 0) {
            task->make_executor = otc_jit_policy_executor;
        } else {
            task->make_compiled = otc_jit_policy_compiled;
            task->compile_after = (long)jp.flat_steps;
        }
#else
        otc_neat_population_free(pop);
        return otc_cli_error("evolve", "--jit: this otc was built without LLVM");
#endif
    }
    if (a->front && otc_neat_track_front(pop) != OTC_OK) {
        otc_neat_population_free(pop);
        return otc_cli_error("evolve", "%s", otc_last_error());
    }
    otc_neat_run_options ro = {.generations = a->generations,
                               .threads = a->threads,
                               .remote = a->remote,
                               .checkpoint_every = a->every,
                               .checkpoint_prefix = a->prefix,
                               .on_generation = otc_cli_interactive() ? progress : NULL,
                               .ctx = (void *)task->score_name};
    bool solved = false;
    s = otc_neat_run(pop, task, &ro, &solved);
    int exit_code = solved ? OTC_EXIT_OK : OTC_EXIT_GOAL;
    if (s != OTC_OK) exit_code = otc_cli_error("evolve", "%s", otc_last_error());
    if (exit_code != OTC_EXIT_USAGE && a->stats && otc_neat_stats_save_csv(pop, a->stats) != OTC_OK)
        exit_code = otc_cli_error("evolve", "%s", otc_last_error());
    if (exit_code != OTC_EXIT_USAGE && a->plot) {
        char title[160];
        snprintf(title, sizeof title, "NEAT %s: fitness per generation", task->name);
        if (otc_neat_stats_save_svg(pop, title, a->plot) != OTC_OK)
            exit_code = otc_cli_error("evolve", "%s", otc_last_error());
    }
    const otc_neat_genome *champ = otc_neat_champion(pop);
    if (exit_code != OTC_EXIT_USAGE && champ) {
        printf("%s: %s after %d generation(s), %ld evaluations; champion fitness %.6g, "
               "%d hidden node(s), %d enabled connection(s)%s\n",
               task->name,
               solved                  ? "solved"
               : otc_neat_extinct(pop) ? "every species stagnated"
                                       : "not solved",
               otc_neat_stats_count(pop), otc_neat_evaluations(pop), champ->fitness,
               otc_neat_genome_hidden_count(champ), otc_neat_genome_enabled_count(champ),
               a->out ? "" : " (not saved: no --out)");
        if (task->measure_name && print_measure(a, task, champ) != OTC_EXIT_OK)
            exit_code = OTC_EXIT_USAGE;
        for (int j = 0; j < a->config->n_objectives; j++)
            if (otc_neat_objective_paints(a->config->objectives[j])) {
                printf("%s: champion substrate: %.0f expressed link(s), summed squared length "
                       "%.4g\n",
                       task->name,
                       otc_neat_objective_of(a->config, OTC_NEAT_OBJ_SUBSTRATE_LINKS, champ),
                       otc_neat_objective_of(a->config, OTC_NEAT_OBJ_SUBSTRATE_LENGTH, champ));
                break;
            }
        if (exit_code != OTC_EXIT_USAGE && a->out) {
            otc_graph *g = NULL;
            if (otc_neat_champion_graph(pop, task, &g) != OTC_OK ||
                record_csv_columns(g, a->csv, a->config) != OTC_OK ||
                otc_model_save(g, a->out) != OTC_OK)
                exit_code = otc_cli_error("evolve", "%s", otc_last_error());
            else
                printf("champion saved to %s\n", a->out);
            otc_graph_free(g);
        }
        if (exit_code != OTC_EXIT_USAGE && a->reevaluate && reevaluate(a, champ) != OTC_EXIT_OK)
            exit_code = OTC_EXIT_USAGE;
        if (exit_code != OTC_EXIT_USAGE && a->substrate_svg &&
            save_substrate_svg(a, champ, task) != OTC_EXIT_OK)
            exit_code = OTC_EXIT_USAGE;
    }
    if (exit_code != OTC_EXIT_USAGE && a->maze_svg) {
        if (otc_maze_save_svg(otc_maze_get(task->name + 5), pop, task, a->maze_svg) != OTC_OK)
            exit_code = otc_cli_error("evolve", "%s", otc_last_error());
        else
            printf("maze picture saved to %s\n", a->maze_svg);
    }
    if (exit_code != OTC_EXIT_USAGE && a->front) {
        int rc2 = save_front(a, pop, task);
        if (rc2) exit_code = rc2;
    }
#ifdef OTC_HAVE_JIT
    if (a->jit) {
        otc_jit_policy_stats js = otc_jit_policy_info();
        if (task->make_compiled)
            printf("jit: %ld genome(s) ran past %ld steps: %ld compiled (%.1f ms in all), %ld too "
                   "small to gain, %ld could not be\n",
                   js.executors, task->compile_after, js.compiled, js.compile_ms, js.too_small,
                   js.failed);
        else
            printf("jit: %ld of %ld genome executors compiled (%ld could not be)\n", js.compiled,
                   js.executors, js.failed);
    }
#endif
    otc_neat_population_free(pop);
    return exit_code;
}

int otc_cmd_evolve(int argc, char **argv) {
    const char *task_spec = NULL, *resume = NULL, *out = NULL, *stats = NULL, *plot = NULL;
    const char *reevaluate_spec = NULL;
    const char *prefix = "neat-checkpoint-";
    uint64_t seed = 1;
    int generations = 300, threads = 0, every = 0, jit_steps = -1, max_connections = -1;
    double max_cost = -1;
    const char *front = NULL, *maze_svg = NULL, *substrate_svg = NULL;
    double mpi_timeout = 600;
    bool seed_given = false, jit = false, ctrnn = false;
    double advance_time = 0, time_step = 0;
    const char *seed_text = NULL;
    const otc_opt opts[] = {
        {"--task", OTC_OPT_STRING, &task_spec,
         "TASK: xor, xor:neat-python (its fitness 4 - sum err^2), pole1, pole1:neat-python "
         "(neat-python's single-pole example), dpv, dpnv, maze:medium, maze:hard (Lehman & "
         "Stanley's maze navigation), visual or visual:N (HyperNEAT's boxes, the config's "
         "[Substrate]; N = 33: the 11x11 field at 33x33), retina or retina:or (the "
         "left-and-right retina, a [Substrate] from a 4x2 input grid to a 1x1 output; "
         "retina:sides: to a 2x1 output, left object and right object), "
         "csv:FILE or exec:PROGRAM (an "
         "environment process; see examples/exec/) (required)"},
        {"--ctrnn", OTC_OPT_FLAG, &ctrnn,
         "phenotypes are neat-python CTRNNs with evolved time constants (the config's "
         "time_constant_* keys; as its ctrnn = true)"},
        {"--advance-time", OTC_OPT_FLOAT, &advance_time,
         "T: a CTRNN integrates T seconds per forward (default: the task's time per action)"},
        {"--time-step", OTC_OPT_FLOAT, &time_step,
         "DT: ...in steps of DT seconds (CTRNN.advance's time_step)"},
        {"--seed", OTC_OPT_STRING, &seed_text,
         "N: random seed (default: the config's [NEAT] seed, else 1)"},
        {"--generations", OTC_OPT_RANGE, OTC_RANGE(generations, 1, 100000000),
         "G: stop after G generations (default 300)"},
        {"--threads", OTC_OPT_RANGE, OTC_RANGE(threads, 0, OTC_NEAT_MAX_THREADS),
         "T: evaluation threads, 1 to " OTC_NEAT_MAX_THREADS_TEXT " (default 0: one per core)"},
        {"--checkpoint-every", OTC_OPT_RANGE, OTC_RANGE(every, 0, 100000000),
         "K: write a checkpoint every K generations"},
        {"--checkpoint-prefix", OTC_OPT_TEXT, &prefix,
         "P: checkpoints go to P<generation>.json (default neat-checkpoint-)"},
        {"--resume", OTC_OPT_STRING, &resume,
         "FILE: continue from a checkpoint (--generations counts its generations too)"},
        {"--stats", OTC_OPT_STRING, &stats, "FILE.csv: per-generation statistics"},
        {"--plot", OTC_OPT_STRING, &plot, "FILE.svg: best and mean fitness per generation"},
        {"--out,--output,-o", OTC_OPT_STRING, &out, "FILE.otm: where to save the champion"},
        {"--front", OTC_OPT_STRING, &front,
         "DIR: the run's Pareto front over the config's objectives: each member as a model, "
         "front.csv, front.svg, and the chosen member as chosen.otm"},
        {"--maze-svg", OTC_OPT_STRING, &maze_svg,
         "FILE.svg: with --task maze:NAME, the maze with the last generation's final positions, "
         "the novelty archive and the champion's path"},
        {"--substrate-svg", OTC_OPT_STRING, &substrate_svg,
         "FILE.svg: with a [Substrate], the champion's substrate at its nodes' coordinates: "
         "each grid a panel and the strongest painted links, or (ES-HyperNEAT) the hidden "
         "nodes the search placed and its links"},
        {"--max-connections", OTC_OPT_RANGE, OTC_RANGE(max_connections, 0, 1 << 30),
         "N: with --front, choose the fittest member with at most N enabled connections "
         "(default: the knee)"},
        {"--max-cost", OTC_OPT_FLOAT, &max_cost,
         "C: with --front, choose the fittest member costing at most C (multiply-adds + weight "
         "bytes per sample)"},
        {"--mpi-timeout", OTC_OPT_FLOAT, &mpi_timeout,
         "S: under mpirun, stop when a rank holding work sends nothing for S seconds (default "
         "600)"},
        {"--jit", OTC_OPT_FLAG, &jit,
         "compile genomes with LLVM when their evaluation or training work makes it pay "
         "(the same results)"},
        {"--jit-steps", OTC_OPT_RANGE, OTC_RANGE(jit_steps, 0, INT_MAX),
         "N: with --jit, compile every genome that runs N steps (default: those large enough "
         "to gain, after the measured break-even)"},
        {"--reevaluate", OTC_OPT_STRING, &reevaluate_spec,
         "TASK: after the run, score the champion on TASK too, without further evolution "
         "(visual:33: a HyperNEAT champion at 33x33)"},
    };
    const char *pos[1];
    int rc = otc_cli_parse("evolve", "CONFIG.ini --task TASK [options] --out best.otm", opts,
                           (int)(sizeof opts / sizeof opts[0]), argc, argv, pos, 1, 1);
    if (rc < 0) return OTC_EXIT_OK;
    if (rc) return rc;
    if (!task_spec) return otc_cli_error("evolve", "--task is required (try 'otc evolve --help')");
    if (!strncmp(task_spec, "csv:", 4) && !task_spec[4])
        return otc_cli_error("evolve", "--task csv: needs the CSV file's path (csv:FILE)");
    if (!strncmp(task_spec, "exec:", 5) && !task_spec[5])
        return otc_cli_error("evolve", "--task exec: needs a program (exec:PROGRAM)");
    if (seed_text) {
        if (!otc_cli_parse_u64(seed_text, &seed))
            return otc_cli_error("evolve",
                                 "bad value '%s' for --seed (expected an integer from 0 to "
                                 "%" PRIu64 ")",
                                 seed_text, UINT64_MAX);
        seed_given = true;
    }
    if (generations < 1) return otc_cli_error("evolve", "--generations must be at least 1");
    if (!(mpi_timeout > 0 && mpi_timeout <= 1e6)) /* NaN too: the wait must stay bounded */
        return otc_cli_error("evolve", "--mpi-timeout must be from 0 (exclusive) to 1e6 seconds");
    if (every < 0) return otc_cli_error("evolve", "--checkpoint-every must not be negative");
    if (maze_svg && strncmp(task_spec, "maze:", 5))
        return otc_cli_error("evolve", "--maze-svg is for --task maze:NAME");
    if ((max_connections != -1 || max_cost != -1) && !front)
        return otc_cli_error("evolve", "--max-connections and --max-cost choose from --front");
    if (max_cost != -1 && !(max_cost >= 0 && max_cost <= 1e15))
        return otc_cli_error("evolve", "--max-cost must be a number from 0 to 1e15");
    if (jit_steps != -1 && (jit_steps < 0 || !jit))
        return otc_cli_error("evolve", "--jit-steps must not be negative, and needs --jit");
    if (threads < 0 || threads > OTC_NEAT_MAX_THREADS)
        return otc_cli_error("evolve", "--threads must be from 1 to " OTC_NEAT_MAX_THREADS_TEXT
                                       ", or 0 for one per core");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (threads == 0) threads = (int)cores;
    /* exec: every thread drives an environment process of its own; past one per core they
     * only queue for the CPU (and all start at once). */
    if (!strncmp(task_spec, "exec:", 5) && threads > cores) {
        fprintf(stderr,
                "otc evolve: --threads %d capped at %ld for exec: (one environment "
                "process per core)\n",
                threads, cores);
        threads = (int)cores;
    }

    const char *csv = !strncmp(task_spec, "csv:", 4) ? task_spec + 4 : NULL;
    /* --front's files with fixed names (its member-K.otm are numbered after the run). */
    char front_csv[4096] = "", front_svg[4096] = "", chosen[4096] = "";
    if (front &&
        (snprintf(front_csv, sizeof front_csv, "%s/front.csv", front) >= (int)sizeof front_csv ||
         snprintf(front_svg, sizeof front_svg, "%s/front.svg", front) >= (int)sizeof front_svg ||
         snprintf(chosen, sizeof chosen, "%s/chosen.otm", front) >= (int)sizeof chosen))
        return otc_cli_error("evolve", "--front: directory name too long");
    const otc_cli_file files[N_EVOLVE_FILES] = {{"CONFIG", pos[0]},
                                                {"--resume", resume},
                                                {"--task csv:", csv}, /* inputs */
                                                {"--out", out},
                                                {"--stats", stats},
                                                {"--plot", plot},
                                                {"--maze-svg", maze_svg},
                                                {"--substrate-svg", substrate_svg},
                                                {"--front's front.csv", front ? front_csv : NULL},
                                                {"--front's front.svg", front ? front_svg : NULL},
                                                {"--front's chosen.otm", front ? chosen : NULL}};
    if ((rc = otc_cli_check_files("evolve", files, N_EVOLVE_INS, files + N_EVOLVE_INS,
                                  N_EVOLVE_FILES - N_EVOLVE_INS)))
        return rc;

    if ((rc = otc_cli_check_task("evolve", task_spec))) return rc;
    otc_neat_config config;
    if (otc_neat_config_load(pos[0], &config) != OTC_OK)
        return otc_cli_error("evolve", "%s", otc_last_error());
    if (substrate_svg && !config.substrate.enabled)
        return otc_cli_error("evolve",
                             "--substrate-svg draws a HyperNEAT substrate: %s has no [Substrate] "
                             "section",
                             pos[0]);
    if (config.time_constants_given && !ctrnn && !config.ctrnn)
        return otc_cli_error("evolve",
                             "%s sets time_constant_* keys, as neat-python's CTRNN configs do: "
                             "add --ctrnn to evolve CTRNNs (or ctrnn = true in [DefaultGenome]), "
                             "or remove those keys to evolve plain networks",
                             pos[0]);
    if ((advance_time != 0 || time_step != 0) && !ctrnn && !config.ctrnn)
        return otc_cli_error("evolve", "--advance-time and --time-step are for --ctrnn");
    if ((ctrnn || config.ctrnn) &&
        otc_neat_config_ctrnn(&config, pos[0], advance_time, time_step) != OTC_OK)
        return otc_cli_error("evolve", "%s (--ctrnn, --advance-time, --time-step)",
                             otc_last_error());
    if (!seed_given && config.has_seed) { /* neat-python's [NEAT] seed; --seed overrides it */
        seed = config.seed;
        seed_given = true;
    }
    otc_neat_task *task = NULL;
    otc_status ts = otc_neat_task_create(task_spec, &config, &task);
    if (ts == OTC_ERR_CONFIG) /* the config does not fit the task: name the config */
        return otc_cli_error("evolve", "%s: %s", pos[0], otc_last_error());
    if (ts != OTC_OK) return otc_cli_error("evolve", "%s", otc_last_error());
    if (otc_neat_ctrnn_times(&config, task) != OTC_OK) {
        otc_neat_task_free(task);
        return otc_cli_error("evolve", "%s: %s", pos[0], otc_last_error());
    }
    otc_neat_task *again = NULL;
    if (reevaluate_spec &&
        (ts = otc_neat_task_create(reevaluate_spec, &config, &again)) != OTC_OK) {
        otc_neat_task_free(task);
        return otc_cli_error("evolve", "--reevaluate %s: %s", reevaluate_spec, otc_last_error());
    }
    /* Under mpirun: rank 0 runs the population, every other rank evaluates for it. */
    const otc_cli_mpi *mpi = NULL;
    const otc_neat_remote *remote = NULL;
    int mpi_size = 1;
    if (otc_cli_mpi_launched()) {
        int rank = 0;
        /* The JIT's policy compiles a genome once this process's interpreted work pays for
         * it, and compiled math differs from libm's in the last bits: under mpirun which
         * genomes compile would depend on the ranks, and so would the run. */
        if (jit) {
            otc_neat_task_free(task);
            otc_neat_task_free(again);
            return otc_cli_error("evolve", "--jit cannot be used under mpirun: the results "
                                           "would depend on the number of ranks");
        }
        if (!(mpi = otc_cli_mpi_load()) || mpi->init(&rank, &mpi_size) != OTC_OK) {
            otc_neat_task_free(task);
            otc_neat_task_free(again);
            return otc_cli_error("evolve", "%s", otc_last_error());
        }
        if (rank > 0) {
            otc_status ss = mpi->serve(task, &config, threads);
            if (ss != OTC_OK) otc_cli_error("evolve", "MPI rank %d: %s", rank, otc_last_error());
            otc_neat_task_free(task);
            otc_neat_task_free(again);
            mpi->finish(ss == OTC_OK);
            return ss == OTC_OK ? OTC_EXIT_OK : OTC_EXIT_USAGE;
        }
        otc_neat_mpi_options mo = {.timeout_seconds = mpi_timeout};
        if (mpi->remote(&mo, &remote) != OTC_OK) {
            otc_cli_error("evolve", "%s", otc_last_error());
            mpi->finish(false);
        }
    }
    evolve_args ea = {.resume = resume,
                      .seed_given = seed_given,
                      .seed = seed,
                      .prefix = prefix,
                      .every = every,
                      .generations = generations,
                      .jit = jit,
                      .jit_steps = jit_steps,
                      .threads = threads,
                      .stats = stats,
                      .plot = plot,
                      .out = out,
                      .csv = csv,
                      .front = front,
                      .maze_svg = maze_svg,
                      .substrate_svg = substrate_svg,
                      .max_connections = max_connections,
                      .max_cost = max_cost,
                      .files = files,
                      .config = &config,
                      .remote = remote,
                      .reevaluate = again};
    int exit_code = evolve_population(&ea, task);
    otc_neat_task_free(task);
    otc_neat_task_free(again);
    if (mpi) {
        if (exit_code != OTC_EXIT_USAGE) { /* what distribution cost: the scaling estimate */
            otc_neat_mpi_traffic t = mpi->traffic();
            printf("mpi: %d ranks; %lld bytes sent, %lld received; %ld genomes evaluated by "
                   "other ranks, %ld by rank 0\n",
                   mpi_size, t.bytes_sent, t.bytes_received, t.genomes_sent, t.genomes_local);
        }
        fflush(NULL);
        mpi->finish(exit_code != OTC_EXIT_USAGE); /* a failed run aborts every rank, exit 2 */
    }
    return exit_code;
}
