#!/usr/bin/env python3
"""PyTorch eager's side of bench/images.c: the example's CNN (examples/fashion_mnist.c, LeNet-5
on 1x28x28 images: conv 5x5 pad 2 -> 6, relu, maxpool 2, conv 5x5 -> 16, relu, maxpool 2,
dense 400 -> 120 -> 84 -> 10), timed the same way.

    python3 bench/images_torch.py [--threads 1,2]

One line per thread count, "threads train64_ms infer1_us infer64_us": a training step at
batch 64 (forward, softmax cross-entropy, backward, Adam lr 1e-3) in milliseconds, inference
(torch.no_grad) at batch 1 and 64 in microseconds, each the median of 7 timed blocks; then
the same for TorchScript, "ts threads train64_ms infer1_us infer64_us": the model traced for
the training step, traced, frozen and optimised for inference (bench/torch_peers.py). Exits
77 when torch is missing (bench/images.c then leaves its columns out).
"""
import sys

from bench_timing import median_time
from torch_peers import torchscript_inference, torchscript_training

try:
    import torch
except ImportError:
    sys.exit(77)


def lenet():
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def main():
    threads = [1, 2]
    if "--threads" in sys.argv:
        threads = [int(t) for t in sys.argv[sys.argv.index("--threads") + 1].split(",")]
    torch.manual_seed(1)
    for th in threads:
        torch.set_num_threads(th)
        x64, y64 = torch.rand(64, 1, 28, 28), torch.randint(0, 10, (64,))
        x1 = torch.rand(1, 1, 28, 28)
        eager = time_model(lenet(), lenet(), x1, x64, y64)
        print(f"{th} " + eager, flush=True)
        torch.manual_seed(1)
        train_model = torchscript_training(torch, lenet(), (x64,))
        infer_model = torchscript_inference(torch, lenet(), (x64,))
        print(f"ts {th} " + time_model(train_model, infer_model, x1, x64, y64), flush=True)


def time_model(train_model, infer_model, x1, x64, y64):
    """'train64_ms infer1_us infer64_us' of a model (its training and inference forms)."""
    opt = torch.optim.Adam(train_model.parameters(), lr=1e-3)

    def train():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(train_model(x64), y64).backward()
        opt.step()

    def infer(x):
        with torch.no_grad():
            infer_model(x)

    t = median_time(train)
    i1 = median_time(lambda: infer(x1))
    i64 = median_time(lambda: infer(x64))
    return f"{t * 1e3:.4f} {i1 * 1e6:.2f} {i64 * 1e6:.2f}"

if __name__ == "__main__":
    main()
