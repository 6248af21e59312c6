#!/usr/bin/env python3
"""PyTorch eager's side of bench/images.c: the example's CNN (examples/fashion_mnist.c, LeNet-5
on 1x28x28 images: conv 5x5 pad 2 -> 6, relu, maxpool 2, conv 5x5 -> 16, relu, maxpool 2,
dense 400 -> 120 -> 84 -> 10), timed the same way.

    python3 bench/images_torch.py [--threads 1,2]

One line per thread count, "threads train64_ms infer1_us infer64_us": a training step at
batch 64 (forward, softmax cross-entropy, backward, Adam lr 1e-3) in milliseconds, inference
(torch.no_grad) at batch 1 and 64 in microseconds, each the median of 7 timed blocks. Exits
77 when torch is missing (bench/images.c then leaves its columns out).
"""
import sys

from bench_timing import median_time

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
        model = lenet()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x64, y64 = torch.rand(64, 1, 28, 28), torch.randint(0, 10, (64,))
        x1 = torch.rand(1, 1, 28, 28)

        def train():
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x64), y64).backward()
            opt.step()

        def infer(x):
            with torch.no_grad():
                model(x)

        t = median_time(train)
        i1 = median_time(lambda: infer(x1))
        i64 = median_time(lambda: infer(x64))
        print(f"{th} {t * 1e3:.4f} {i1 * 1e6:.2f} {i64 * 1e6:.2f}", flush=True)


if __name__ == "__main__":
    main()
