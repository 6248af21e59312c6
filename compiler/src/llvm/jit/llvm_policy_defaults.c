/* The evolve policy's default costs (llvm_policy.c), apart from the policy so that
 * libotc_compiler.so's loader can hand them out without loading the LLVM backend: `otc evolve
 * --jit` loads LLVM only when the first genome qualifies for compiling. */
#include "otc/jit.h"

otc_jit_policy otc_jit_policy_defaults(void) {
    /* Measured on the 2-core build machine (znver3, AVX2) with `otc bench --random N` and
     * the fast tier the policy compiles with: the interpreter runs a forward at batch 1 in
     * about 15 ns per graph node, the fast tier's code in about 5; compiling costs about 4 ms
     * plus 0.05 ms per node (a 100-neuron genome, 301 nodes: ~10-20 ms; the math library's
     * one-off cost is not counted); a training step costs about three forwards and its code
     * about three forward compiles. */
    otc_jit_policy p = {0};
    p.interp_ns = 15.0;
    p.jit_ns = 5.0;
    p.compile_ms = 4.0;
    p.compile_ms_per_node = 0.05;
    p.train_factor = 3.0;
    p.train_samples = 0.0;
    /* Against NEAT's flat program (bench/neat_jit_breakeven, same machine, CPU time): exact
     * code calls libm's expf as the flat program does, so it saves only the loop overhead, and
     * the executor's per-step bookkeeping eats that on small genomes: 3 hidden neurons (17
     * graph nodes) 71 ns a step flat, 96 compiled; 10 hidden (45 nodes) 177 against 153;
     * 20 (85) 316 against 257; 100 (405) 1,490 against 1,270. A compile takes 3-6 ms for the
     * small ones, 31 for 100 neurons: the break-even is 130,000-280,000 steps from 45 nodes
     * on, and never below. */
    p.flat_steps = 2e5;
    p.flat_min_nodes = 45;
    return p;
}
