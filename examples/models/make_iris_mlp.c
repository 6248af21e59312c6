/* Builds the untrained iris classifier shipped as examples/models/iris_mlp.otm: 4 features ->
 * 16 ReLU units -> 3 class logits, weights drawn from a fixed seed. Train it with
 *   otc train iris_mlp.otm --data examples/data/iris.csv --target species --out trained.otm
 * Usage: make_iris_mlp OUT.otm [SEED] */
#include <stdio.h>
#include <stdlib.h>

#include "otc/otc.h"

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: make_iris_mlp OUT.otm [SEED]\n");
        return 2;
    }
    uint64_t seed = argc == 3 ? strtoull(argv[2], NULL, 10) : 42;
    otc_rng rng;
    otc_rng_seed(&rng, seed);
    otc_graph *g = otc_graph_new();
    otc_id x = otc_input(g, "x", otc_shape_2d(OTC_BATCH, 4));
    int sizes[2] = {16, 3};
    otc_id logits = otc_mlp(g, x, 2, sizes, OTC_OP_RELU, -1, &rng);
    if (logits < 0 || otc_graph_set_name(g, logits, "logits") != OTC_OK ||
        otc_graph_mark_output(g, logits) != OTC_OK ||
        otc_graph_meta_set(g, "about",
                           "{\"task\":\"iris\",\"features\":[\"sepal_length\",\"sepal_width\","
                           "\"petal_length\",\"petal_width\"],\"classes\":[\"setosa\","
                           "\"versicolor\",\"virginica\"]}") != OTC_OK ||
        otc_model_save(g, argv[1]) != OTC_OK) {
        fprintf(stderr, "make_iris_mlp: %s\n", otc_last_error());
        otc_graph_free(g);
        return 1;
    }
    otc_graph_free(g);
    return 0;
}
