#!/bin/sh
# `otc compile --emit-c` end to end: a saved model to C, built with the strict flags, the plan
# drawn, and bad usage refused. Usage: emitc_cli.sh OTC MODEL.otm
set -eu
otc=$1
model=$2
dir=$(mktemp -d /tmp/otc_emitc_cli_XXXXXX)
trap 'rm -rf "$dir"' EXIT

"$otc" compile "$model" --emit-c "$dir/out" --name iris --plan-dot "$dir/plan.dot" > "$dir/log"
grep -q "wrote $dir/out/iris.h" "$dir/log"
grep -q "cluster_k0" "$dir/plan.dot"
cc -std=c99 -Wall -Wextra -Werror -pedantic -O2 -c "$dir/out/iris.c" -o "$dir/iris.o"

"$otc" compile "$model" --emit-c "$dir/out" --name iris_t --train --loss softmax_ce \
    --optim sgd --momentum 0.9 --batch 32 > "$dir/log"
grep -q "training: workspace" "$dir/log"
grep -q "IRIS_T_MAX_BATCH 32" "$dir/out/iris_t.h"
cc -std=c99 -Wall -Wextra -Werror -pedantic -O2 -c "$dir/out/iris_t.c" -o "$dir/iris_t.o"

# `otc viz --plan` draws the same plan.
"$otc" viz "$model" --plan -o "$dir/viz.dot"
grep -q "cluster_k0" "$dir/viz.dot"

# The default name comes from the file name.
"$otc" compile "$model" --emit-c "$dir/out2" > /dev/null
test -f "$dir/out2/iris_mlp.c"

# Refused: a name that is not a C identifier, conflicting batch options, a missing model,
# an unknown loss. Each exits 2 with a message.
for args in "--name 9lives" "--batch 4 --dynamic-batch" "--train --loss hinge"; do
    if "$otc" compile "$model" --emit-c "$dir/out" $args 2> "$dir/err"; then
        echo "accepted: $args" >&2
        exit 1
    fi
    test -s "$dir/err"
done
if "$otc" compile "$dir/missing.otm" --emit-c "$dir/out" 2> "$dir/err"; then exit 1; fi
grep -q "missing.otm" "$dir/err"
echo ok
