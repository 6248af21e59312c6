/* A main() for C emitted by `otc compile --emit-c`: reads rows of numbers (comma- or
 * space-separated) from stdin, runs NAME_forward on all of them in one batch, prints CSV.
 * Build: cc -O2 -DOTC_MODEL=iris -DOTC_MODEL_UPPER=IRIS -I DIR csv_main.c DIR/iris.c -lm
 * This file is the one place with stdio and malloc; the model's code has neither. */
#include <stdio.h>
#include <stdlib.h>

#ifndef OTC_MODEL
#error "define OTC_MODEL as the --name given to otc compile"
#endif
#define STR2(x)    #x
#define STR(x)     STR2(x)
#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#include STR(OTC_MODEL.h)

int main(void) {
    const int n_in = CAT(OTC_MODEL_UPPER, _IN_FLOATS), n_out = CAT(OTC_MODEL_UPPER, _OUT_FLOATS);
    size_t cap = 1024, n = 0;
    float *in = malloc(cap * sizeof *in);
    float v;
    while (in && scanf(" %f ,", &v) == 1) {
        if (n == cap) {
            float *grown = realloc(in, (cap *= 2) * sizeof *in);
            if (!grown) break;
            in = grown;
        }
        in[n++] = v;
    }
    int batch = (int)(n / (size_t)n_in);
    float *out = malloc((size_t)(batch ? batch : 1) * (size_t)n_out * sizeof *out);
    void *ws = malloc(CAT(OTC_MODEL, _workspace_bytes)(batch ? batch : 1));
    if (!in || !out || !ws || batch == 0 || n % (size_t)n_in) {
        fprintf(stderr, "expected rows of %d numbers on stdin\n", n_in);
        return 2;
    }
    if (CAT(OTC_MODEL, _forward)(in, out, batch, ws)) return 1;
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < n_out; k++)
            printf("%.7g%c", out[b * n_out + k], k + 1 < n_out ? ',' : '\n');
    free(in);
    free(out);
    free(ws);
    return 0;
}
