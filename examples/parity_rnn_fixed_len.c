/* Parity of 10-bit strings with an RNN (1→16, tanh) and a linear layer (16→2) on its last
 * state, trained through time; held-out strings must reach 95% accuracy. */
#include "parity.h"

int main(int argc, char **argv) {
    static const int lengths[] = {10};
    parity_config c = {.name = "parity_rnn_fixed_len",
                       .cell = OTC_CELL_RNN,
                       .hidden = 16,
                       .n_lengths = 1,
                       .lengths = lengths,
                       .epochs = 60,
                       .lr = 0.01f,
                       .threshold = 0.95f};
    return parity_main(argc, argv, &c);
}
