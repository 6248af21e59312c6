/* The machine's measured dense peak: OpenBLAS sgemm GFLOP/s on one thread at a few square sizes.
 * The PyTorch bench scripts (bench/torch_compare.py, images_torch.py) divide their dense rows'
 * GFLOP/s by the best figure, read from the file --write names (or by running this program).
 * Usage: sgemm_peak [--quick] [--write FILE]
 *   --quick        shorter blocks (a smoke run)
 *   --write FILE   also write the best GFLOP/s, one number, to FILE */
#include <stdio.h>
#include <string.h>

#include "gflops.h"

int main(int argc, char **argv) {
    double block_seconds = 0.3;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            block_seconds = 0.02;
        } else if (!strcmp(argv[i], "--write") && i + 1 < argc) {
            out = argv[++i];
        } else {
            fprintf(stderr, "usage: sgemm_peak [--quick] [--write FILE]\n");
            return 2;
        }
    }
    openblas_set_num_threads(1); /* the peak of one core: every row it is compared to is */
    static const int sizes[] = {64, 128, 256, 512, 1024};
    double best = 0;
    printf("sgemm_peak: OpenBLAS cblas_sgemm, one thread, median of 7 blocks\n");
    printf("  %6s %10s\n", "n", "GFLOP/s");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        double gflops = bench_sgemm_gflops(sizes[k], block_seconds);
        if (gflops < 0) {
            fprintf(stderr, "sgemm_peak: out of memory at n=%d\n", sizes[k]);
            return 1;
        }
        if (gflops > best) best = gflops;
        printf("  %6d %10.1f\n", sizes[k], gflops);
    }
    printf("  peak (best of the sizes): %.1f GFLOP/s\n", best);
    if (out) {
        FILE *f = fopen(out, "w");
        if (!f || fprintf(f, "%.2f\n", best) < 0 || fclose(f)) {
            fprintf(stderr, "sgemm_peak: cannot write %s\n", out);
            return 2;
        }
    }
    return 0;
}
