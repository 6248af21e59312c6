/* Speciation shared among the evaluation threads: dpnv's population (1,000 genomes, hundreds
 * of species) speciated on 2 and 3 threads as on one (the serial loop, the reference), and
 * every genome within the threshold of its species' representative by the public distance. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "otc/neat.h"
#include "otc/neat_genome.h"

#define GENERATIONS 3

typedef struct {
    int n_species, n_genomes;
    int *species_id;  /* per species, in the population's order */
    int *genome_spec; /* per genome: its species id */
} speciation;

static void record(const otc_neat_population *p, speciation *s) {
    s->n_species = otc_neat_population_species_count(p);
    s->n_genomes = otc_neat_population_size(p);
    s->species_id = malloc(sizeof(int) * (size_t)(s->n_species + 1));
    s->genome_spec = malloc(sizeof(int) * (size_t)(s->n_genomes + 1));
    REQUIRE(s->species_id && s->genome_spec);
    for (int k = 0; k < s->n_species; k++) s->species_id[k] = otc_neat_population_species(p, k)->id;
    for (int i = 0; i < s->n_genomes; i++)
        s->genome_spec[i] = otc_neat_population_genome((otc_neat_population *)p, i)->species;
}

/* Every genome is a member of the species its id names and within `threshold` of that
 * species' representative. */
static void check_members(otc_neat_population *p, const otc_neat_config *c, double threshold) {
    int n = otc_neat_population_size(p), placed = 0;
    for (int k = 0; k < otc_neat_population_species_count(p); k++) {
        const otc_neat_species *sp = otc_neat_population_species(p, k);
        for (int m = 0; m < sp->n_members; m++) {
            otc_neat_genome *g = otc_neat_population_genome(p, sp->members[m]);
            REQUIRE(g);
            CHECK(g->species == sp->id);
            double d = otc_neat_distance(g, sp->representative, c);
            CHECK_MSG(d < threshold, "genome %d: distance %g to species %d", sp->members[m], d,
                      sp->id);
            placed++;
        }
    }
    CHECK(placed == n);
}

static void run(int threads, speciation *out) {
    otc_neat_config c;
    otc_neat_task *task = NULL;
    otc_neat_population *p = NULL;
    REQUIRE(otc_neat_config_load(OTC_SOURCE_DIR "/examples/neat/dpnv.ini", &c) == OTC_OK);
    REQUIRE(otc_neat_task_create("dpnv", &c, &task) == OTC_OK);
    REQUIRE(otc_neat_population_new(&c, 5, &p) == OTC_OK);
    otc_neat_step_options o = {.threads = threads};
    for (int g = 0; g < GENERATIONS; g++) {
        double threshold = otc_neat_threshold(p);
        bool solved = false;
        REQUIRE(otc_neat_step(p, task, &o, &solved) == OTC_OK);
        REQUIRE(!solved);
        check_members(p, &c, threshold);
        record(p, &out[g]);
    }
    /* Enough species for the threads to share the work (the parallel test has a floor). */
    CHECK_MSG(out[GENERATIONS - 1].n_species > 50, "%d species", out[GENERATIONS - 1].n_species);
    otc_neat_population_free(p);
    otc_neat_task_free(task);
}

static void clear(speciation *s) {
    free(s->species_id);
    free(s->genome_spec);
}

TEST(neat_speciation_same_on_any_thread_count) {
    speciation one[GENERATIONS], many[GENERATIONS];
    run(1, one);
    for (int threads = 2; threads <= 3; threads++) {
        run(threads, many);
        for (int g = 0; g < GENERATIONS; g++) {
            REQUIRE(many[g].n_species == one[g].n_species);
            REQUIRE(many[g].n_genomes == one[g].n_genomes);
            for (int k = 0; k < one[g].n_species; k++)
                CHECK_MSG(many[g].species_id[k] == one[g].species_id[k],
                          "threads %d generation %d species %d", threads, g, k);
            for (int i = 0; i < one[g].n_genomes; i++)
                CHECK_MSG(many[g].genome_spec[i] == one[g].genome_spec[i],
                          "threads %d generation %d genome %d", threads, g, i);
            clear(&many[g]);
        }
    }
    for (int g = 0; g < GENERATIONS; g++) clear(&one[g]);
}
