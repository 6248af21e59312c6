#!/usr/bin/env bash
# The main job: install what is missing, build otc (Release), then evolve, train, compile
# and compare — the whole path from a NEAT run to C that ships. Outputs go to build/demo/.
# Usage: scripts/demo.sh   (as root on a fresh Debian 12 machine, so packages can install)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh --bench
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DOTC_WERROR=ON >/dev/null
cmake --build build/release -j "$(nproc)" >/dev/null
otc=$root/build/release/otc
out=$root/build/demo
rm -rf "$out" && mkdir -p "$out" && cd "$out"
ex=$root/examples
step() { printf '\n== %s\n' "$*"; }
show() { printf '$ %s\n' "$*" | sed "s|$root/||g; s|$out/||g"; "$@"; }

step "1. examples: the runtime trains networks interpretively"
for name in xor sine iris; do "$root/build/release/examples/example_$name"; done

step "2. evolve: NEAT solves XOR (the paper's parameters)"
show "$otc" evolve "$ex/neat/xor.ini" --task xor --seed 3 --out xor.otm
show "$otc" summary xor.otm | sed -n '1,12p'

step "3. evolve with gradient training in the loop (hybrid NEAT) on a circle data set"
show "$otc" evolve "$ex/neat/circle_hybrid.ini" --task "csv:$ex/data/circle.csv" --seed 1 \
  --out circle.otm --plot circle_fitness.svg
show "$otc" viz circle.otm -o circle.svg --weights

step "4. train: an MLP on iris, with a loss plot"
show "$otc" train "$ex/models/iris_mlp.otm" --data "$ex/data/iris.csv" --target species \
  --epochs 40 --batch 16 --out iris.otm --plot iris_loss.svg | tail -3

step "5. images: a LeNet CNN on Fashion-MNIST (one epoch on 12,000 images; the full run reaches 90%)"
fm=/usr/share/datasets/fashion-mnist
show "$root/build/release/examples/example_fashion_mnist" --epochs 1 --train 12000 --test 2000 \
  --threshold 0.7 --save fashion.otm
show "$otc" summary fashion.otm | sed -n '3,10p'
show "$otc" run fashion.otm --data "idx:$fm" --argmax -o fashion_predictions.csv

step "6. compile: standalone C (no malloc, no dependencies), built and checked against otc run"
show "$otc" compile iris.otm --emit-c iris_c --name iris
cc -std=c99 -O3 -Wall -Wextra -Werror -pedantic -DOTC_MODEL=iris -DOTC_MODEL_UPPER=IRIS \
  -I iris_c "$ex/deploy/csv_main.c" iris_c/iris.c -lm -o iris_native
cut -d, -f1-4 "$ex/data/iris.csv" | tail -n +2 > features.csv
./iris_native < features.csv > native.csv
"$otc" run iris.otm --input features.csv --no-header | tail -n +2 > interpreted.csv
paste -d, native.csv interpreted.csv | awk -F, '{ for (i = 1; i <= 3; i++) { d = $i - $(i+3);
  if (d < 0) d = -d; s = ($(i+3) < 0 ? -$(i+3) : $(i+3)); r = d / (s > 1 ? s : 1);
  if (r > m) m = r } } END { printf "emitted C vs interpreter on %d rows: max relative difference %.2g\n", NR, m }'

step "7. ship the evolved double-pole balancer: its emitted C in a C program with its own physics"
show "$otc" compile "$ex/deploy/dpnv_champion.otm" --emit-c dpnv_c --name dpnv
cc -std=c99 -O2 -Wall -Wextra -Werror -pedantic -DOTC_MODEL=dpnv -DOTC_MODEL_UPPER=DPNV \
  -I dpnv_c "$ex/deploy/pole_balancer.c" dpnv_c/dpnv.c -lm -o pole_balancer
show ./pole_balancer 100000

step "8. interop: a PyTorch LeNet in through ONNX, its classifier fine-tuned on an aarch64 device (qemu); the evolved net out; int8 C"
show /usr/bin/python3 "$ex/onnx_finetune/train_lenet.py" "$fm" torch_lenet.onnx 3000
show "$otc" import torch_lenet.onnx -o torch_lenet.otm
show "$otc" compile torch_lenet.otm --emit-c lenet_c --name lenet --train --train-only fc \
  --loss softmax_ce --lr 0.001
mkdir -p fm_raw # the device reads plain IDX files
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  gzip -dc "$fm/$f.gz" > "fm_raw/$f"
done
show aarch64-linux-gnu-gcc -std=c99 -O2 -fno-math-errno -static -I lenet_c "$ex/onnx_finetune/finetune.c" \
  lenet_c/lenet.c -lm -o finetune_aarch64
show qemu-aarch64 ./finetune_aarch64 fm_raw --steps 100 --from 3000 --test 1000
show "$otc" export xor.otm -o xor.onnx
show "$otc" compile iris.otm --emit-c iris_int8 --name iris_q --quantize int8 \
  --calibrate "$ex/data/iris.csv" --drop species

step "9. compare: interpreter vs LLVM JIT vs emitted C, and PyTorch eager on the same graph"
export OPENBLAS_NUM_THREADS=1
show "$otc" bench circle.otm --batch 256 --train --export circle.json
show /usr/bin/python3 "$root/bench/torch_compare.py" circle.json
show "$otc" bench --random 100 --connections 300 --seed 1 --batch 1

printf '\nwrote %s: xor.otm circle.otm iris.otm fashion.otm, circle.svg circle_fitness.svg iris_loss.svg, iris_c/, dpnv_c/, lenet_c/, finetune_aarch64, iris_int8/, xor.onnx\n' "$out"
