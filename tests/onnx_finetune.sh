#!/bin/sh
# The on-device fine-tuning example (examples/onnx_finetune/finetune.c) built for the host on a
# tiny Fashion-MNIST subset (64 training, 8 test images): the imported PyTorch LeNet compiled
# with `otc compile --emit-c --train --train-only fc`, five full-batch Adam steps. Its loss must
# decrease, and the model after them must give the outputs of `otc train --train-only fc` after
# the same steps on the interpreter (within 1e-4). Skips (77) without Debian's
# dataset-fashion-mnist. Usage: onnx_finetune.sh OTC SOURCE_DIR
set -eu
otc=$1
src=$2
fm=/usr/share/datasets/fashion-mnist
[ -r "$fm/train-images-idx3-ubyte.gz" ] || { echo "no $fm: skipped"; exit 77; }
w=$(mktemp -d /tmp/otc_onnx_finetune_XXXXXX)
trap 'rm -rf "$w"' EXIT

# IDX files of the first N images: the header with the count N, then the first N records
subset() { # PREFIX N
    mkdir -p "$w/d"
    { printf '\000\000\010\003\000\000\000'; printf "\\$(printf %o "$2")"
      printf '\000\000\000\034\000\000\000\034'
      gzip -dc "$fm/$1-images-idx3-ubyte.gz" | tail -c +17 | head -c $(($2 * 784)); } \
        > "$w/d/$1-images-idx3-ubyte"
    { printf '\000\000\010\001\000\000\000'; printf "\\$(printf %o "$2")"
      gzip -dc "$fm/$1-labels-idx1-ubyte.gz" | tail -c +9 | head -c "$2"; } \
        > "$w/d/$1-labels-idx1-ubyte"
}
subset train 64
subset t10k 8

"$otc" import "$src/tests/onnx/lenet_fashion.onnx" -o "$w/m.otm" > /dev/null
"$otc" compile "$w/m.otm" --emit-c "$w/c" --name lenet --train --train-only fc \
    --loss softmax_ce --optim adam --lr 0.001 > /dev/null
grep -q 'conv1.*frozen\|Conv.*frozen' "$w/c/lenet.h" || { echo "no frozen conv weights"; exit 1; }
cc -std=c99 -O0 -I"$w/c" "$src/examples/onnx_finetune/finetune.c" "$w/c/lenet.c" -lm \
    -o "$w/ft"
"$w/ft" "$w/d" --steps 5 --batch 64 --test 8 --losses --logits 8 > "$w/c.txt"
first=$(sed -n 's/^step 1 loss //p' "$w/c.txt")
last=$(sed -n 's/^step 5 loss //p' "$w/c.txt")
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' ||
    { echo "loss did not decrease: $first -> $last"; cat "$w/c.txt"; exit 1; }
grep -E '^-?[0-9]' "$w/c.txt" | grep , > "$w/c_logits.csv"

"$otc" train "$w/m.otm" --data "idx:$w/d" --train-only fc --batch 64 --epochs 5 \
    --val-split 0 --optimizer adam --lr 0.001 --loss ce --out "$w/t.otm" > /dev/null
"$otc" run "$w/t.otm" --data "idx:$w/d" -o "$w/i.csv" 2> /dev/null
tail -n +2 "$w/i.csv" > "$w/i_logits.csv"
paste -d, "$w/c_logits.csv" "$w/i_logits.csv" | awk -F, '
    NF != 20 { print "line " NR ": " NF " fields"; bad = 1 }
    { for (k = 1; k <= 10; k++) { c = $k; i = $(k + 10); d = c - i; if (d < 0) d = -d;
          m = i < 0 ? -i : i; if (d > 1e-4 * (m > 1 ? m : 1)) {
              print "image " NR " class " k - 1 ": emitted C " c ", otc train " i; bad = 1 } } }
    END { if (NR != 8) { print NR " rows"; bad = 1 } exit bad }'
echo "ok: loss $first -> $last; the emitted step's model matches otc train's on 8 images"
