/* Parity of bit strings of lengths 5, 7 and 10 mixed, with a GRU (1→16) and a linear layer
 * (16→2) on its last state, trained through time on batches bucketed by length; held-out
 * strings must reach 90% accuracy. */
#include "parity.h"

int main(int argc, char **argv) {
    static const int lengths[] = {5, 7, 10};
    parity_config c = {.name = "parity_gru_var_len",
                       .cell = OTC_CELL_GRU,
                       .hidden = 16,
                       .n_lengths = 3,
                       .lengths = lengths,
                       .epochs = 60,
                       .lr = 0.01f,
                       .threshold = 0.90f};
    return parity_main(argc, argv, &c);
}
